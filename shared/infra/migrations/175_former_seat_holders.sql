-- Who held a seat before a bot took it over (left, timed out): the hash of their token, so they
-- alone (besides the app's secret key) may take the seat back; cleared when the seat is given a
-- new token.
alter table match_seats add column if not exists former_token_hash text;
