-- Open tables by when they last changed: the lobby's idle sweep closes the oldest
-- (PLAYTABLE_OPEN_TABLE_IDLE_S) without reading the others.
create index if not exists lobby_tables_idle on lobby_tables (updated_at) where status = 'open';
