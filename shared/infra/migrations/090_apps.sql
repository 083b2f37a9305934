-- Client apps and the operator. An app authenticates with an API key, stored only as its hash;
-- an operator key has no app. Tables (and their matches) and webhook subscriptions belong to
-- the app that created them: an app sees and changes only its own, and its subscriptions get
-- only its own tables' and matches' events.
create table if not exists apps (
    app_id text primary key,
    name text not null,
    max_open_tables int,                      -- null: the deployment's default
    created_at timestamptz not null default now()
);

create table if not exists api_keys (
    key_id text primary key,
    app_id text references apps (app_id) on delete cascade,   -- null: an operator key
    key_hash text not null unique,
    scopes text[] not null,
    label text not null default '',
    created_at timestamptz not null default now(),
    revoked_at timestamptz
);
create index if not exists api_keys_app on api_keys (app_id, created_at);

alter table lobby_tables add column if not exists app_id text;
create index if not exists lobby_tables_app on lobby_tables (app_id, status, created_at, table_id);
alter table matches add column if not exists app_id text;
alter table webhook_subscriptions add column if not exists app_id text;
create index if not exists webhook_subscriptions_app on webhook_subscriptions (app_id, created_at);

-- Idempotency records are scoped by the caller (a hash of its key or token, in ``scope``) and
-- their answers sealed with a key only that caller's credential derives: a stolen row hands
-- over no seat token or invitation, and another caller's replay never reads it.
delete from idempotency;
