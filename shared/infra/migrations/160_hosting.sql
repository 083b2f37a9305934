-- Hosted play (shared/hosting.py): bots in seats, clocks, and the key bot tokens derive from.
create table if not exists hosting_secrets (
    name text primary key,
    secret text not null
);

-- A match's hosting policy (JSON), its bots by seat (JSON, and the seats as an array for the
-- bots service's query), its clocks (JSON) and when the first running clock runs out.
alter table matches
    add column if not exists hosting bytea,
    add column if not exists bots bytea,
    add column if not exists bot_seats int[] not null default '{}',
    add column if not exists clocks bytea,
    add column if not exists deadline timestamptz;
-- The clocks service's question: which clocks ran out. A match without a clock never has a
-- deadline, so its moves (which leave it null) stay HOT updates.
create index if not exists matches_deadline on matches (deadline) where deadline is not null;
-- The bots service's question: which running matches have bots (then: is one to move).
create index if not exists matches_with_bots on matches (match_id)
    where status = 'running' and bot_seats <> '{}';

alter table lobby_tables
    add column if not exists hosting bytea,
    add column if not exists rematch_of text,
    add column if not exists rematch_table_id text;
alter table lobby_seats
    add column if not exists bot text;

-- Bumped by every change of who holds a seat (a bot taking over, a player re-seated): a match
-- process re-reads a match's seat tokens when it differs from the one it cached.
alter table matches add column if not exists seating int not null default 0;
