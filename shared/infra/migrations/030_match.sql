-- One row per match: the latest snapshot (a cache of the event fold) and who may act.
-- The row's version guards appends: a move commits only if it still holds the version it read.
create table if not exists matches (
    match_id text primary key,
    table_id text,
    game text not null,
    seats int not null,
    options bytea not null,
    players bytea not null,
    version int not null,
    state bytea not null,
    to_move int[] not null,
    status text not null,
    result bytea,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);

create table if not exists match_seats (
    match_id text not null references matches (match_id),
    seat int not null,
    token_hash text not null,
    primary key (match_id, seat)
);
create index if not exists match_seats_token on match_seats (token_hash);
