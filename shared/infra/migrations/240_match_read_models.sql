-- The match service's published read models (docs/architecture.md, "Who owns what"): views over
-- its own tables that the other services read instead of the tables, so the match service may
-- change its tables as long as these keep their columns and meaning. Each view reads one table
-- with no aggregate: the planner inlines it, so a reader's query uses the table's indexes as
-- before and no move pays anything for them.

-- The lobby's (a rematch follows a finished match): each match's table and status
-- ('running', 'finished').
create or replace view match_statuses as
    select match_id, table_id, status from matches;

-- The lobby's (a rematch seats a player by the token the match knows, which may be one the
-- lobby never saw): who holds each seat of a match now (the hash of its token), and who held it
-- until a bot took it over (left, ran out of time), cleared when the seat gets a new token.
create or replace view match_seat_holders as
    select match_id, seat, token_hash, former_token_hash from match_seats;

-- The bots service's: the running matches where a bot is to move (the first seat to move is a
-- bot's), with each bot seat's bot by seat (JSON: {"<seat>": "<bot>"}) and when the match last
-- changed. The partial index matches_with_bots holds the running matches with bots.
create or replace view match_bot_turns as
    select match_id, game, version, to_move, bots, updated_at from matches
    where status = 'running' and bot_seats <> '{}' and to_move[1] = any(bot_seats);

-- The clocks service's: when the first running clock of each clocked match runs out, and the
-- version it runs out at (the partial index matches_deadline holds them).
create or replace view match_deadlines as
    select match_id, version, deadline from matches where deadline is not null;
