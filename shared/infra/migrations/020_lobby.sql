-- The lobby's read model of its table-<id> event streams, updated in the same transaction.
create table if not exists lobby_tables (
    table_id text primary key,
    game text not null,
    name text not null,
    seats int not null,
    options bytea not null,
    seed bigint not null,
    seeded boolean not null,
    status text not null,
    match_id text,
    version int not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
);
create index if not exists lobby_tables_listing on lobby_tables (status, created_at, table_id);

create table if not exists lobby_seats (
    table_id text not null references lobby_tables (table_id),
    seat int not null,
    player_name text not null,
    token_hash text not null unique,
    joined_at timestamptz not null default now(),
    primary key (table_id, seat)
);
