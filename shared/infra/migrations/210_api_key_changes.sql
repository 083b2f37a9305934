-- Every change of api_keys (a key created or revoked, by a service, `playtable apps` or plain
-- SQL) notifies api_keys_changed when it commits: the processes that keep the keys they read
-- (shared/keycache.py) forget them all then, so a revoked key is refused by every process at
-- once. One notification per statement; Postgres sends one per transaction.
create or replace function api_keys_changed() returns trigger language plpgsql as $$
begin
    perform pg_notify('api_keys_changed', '');
    return null;
end
$$;

drop trigger if exists api_keys_changed on api_keys;
create trigger api_keys_changed after insert or update or delete or truncate on api_keys
    for each statement execute function api_keys_changed();
