-- Responses to state-changing requests, keyed by the client's Idempotency-Key within a scope
-- (a match, or a lobby route), written in the same transaction as the change they describe.
create table if not exists idempotency (
    scope text not null,
    key text not null,
    request_hash text not null,
    status int not null,
    body bytea not null,
    created_at timestamptz not null default now(),
    primary key (scope, key)
);
