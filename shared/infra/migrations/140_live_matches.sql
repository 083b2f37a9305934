-- Running matches by game, counted when Prometheus scrapes the match service
-- (playtable_live_matches): the index keeps that count from reading every match ever played.
-- A move changes neither column, so its update of the row stays a HOT update.
create index if not exists matches_running on matches (game) where status = 'running';
