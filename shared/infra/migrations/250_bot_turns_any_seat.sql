-- The bots service's read model (240_match_read_models.sql) names the running matches where any
-- seat that may move is a bot's, not only the first: in a simultaneous phase (Breaking News'
-- vote, its story) every seat to move may act, and each bot seat among them plays its turn.
create or replace view match_bot_turns as
    select match_id, game, version, to_move, bots, updated_at from matches
    where status = 'running' and bot_seats <> '{}' and to_move && bot_seats;
