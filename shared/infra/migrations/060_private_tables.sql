-- Private tables: listed to no one, seen and joined only with the table's invitation token.
-- Like seat tokens, the invitation is stored only as its hash, and only in these rows (never
-- in an event, so never in a published stream). A private table's match keeps the same hash,
-- so the match service can let invited spectators watch without asking the lobby.
alter table lobby_tables
    add column if not exists visibility text not null default 'public',
    add column if not exists invitation_token_hash text;

alter table matches
    add column if not exists private boolean not null default false,
    add column if not exists invitation_token_hash text;
