-- Commitments to a table's secret options (``shared/commitments.py``): each with its salt and
-- value, kept by the lobby (the table shows only the hashes) and by the match (its exported
-- file reveals them once it is over).
alter table lobby_tables add column if not exists commitments bytea not null default '{}';
alter table matches add column if not exists commitments bytea not null default '{}';

-- Invitations: revoked (null hash) or rotated by the table's app while it is open; a table
-- may bound the seats one invitation fills, so each seat remembers the invitation it came with.
alter table lobby_tables add column if not exists seats_per_invitation int;
alter table lobby_seats add column if not exists invitation_token_hash text;
