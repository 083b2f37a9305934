"""Benchmarks in this process, no service running: random playouts of one game on one core
(``bench engine``), and the heuristic bots against random ones on every core (``bench bots``)."""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from tools.bench.common import DEFAULT_PLAYERS


def bench_engine(game_name: str, players: int | None, games: int, seed: int) -> int:
    """Random games on one core, a uniform choice among the legal actions at every step."""
    from services.rules.games.playout import random_playout
    from services.rules.games.registry import GAMES

    game = GAMES[game_name]
    seats = players or DEFAULT_PLAYERS.get(game_name, game.min_players)
    rng = random.Random(seed)
    moves = 0
    started = time.perf_counter()
    for _ in range(games):
        moves += random_playout(game, seats, rng)[2]
    elapsed = time.perf_counter() - started
    print(
        f"{game_name}: {games} random {seats}-player games in {elapsed:.2f} s on one core: "
        f"{games / elapsed:,.0f} games/s, {moves / elapsed:,.0f} moves/s "
        f"({moves / games:.1f} moves per game)"
    )
    if game_name == "carcassonne":
        _carcassonne_legal_moves(game)
    return 0


def _carcassonne_legal_moves(game: Any, boards: int = 20, repeats: int = 200) -> None:
    """All legal moves (placements with follower spots) of the drawn tile on 60-tile boards:
    the first call on each board, and the median of repeated calls (warm caches)."""
    from services.rules.games.playout import play_until

    first: list[float] = []
    repeated: list[float] = []
    for seed in range(boards):
        state = play_until(game, 2, random.Random(seed), lambda s: len(s.codes) >= 60)
        seat = game.to_move(state)[0]
        began = time.perf_counter()
        game.legal_actions(state, seat)
        first.append(time.perf_counter() - began)
        for _ in range(repeats):
            began = time.perf_counter()
            game.legal_actions(state, seat)
            repeated.append(time.perf_counter() - began)
    print(
        f"carcassonne legal moves of one tile on a 60-tile board ({boards} boards): first call "
        f"median {statistics.median(first) * 1e3:.3f} ms, max {max(first) * 1e3:.3f} ms; "
        f"repeated calls median {statistics.median(repeated) * 1e3:.3f} ms"
    )


# --- bots ------------------------------------------------------------------------------------

BOT_TABLES = {
    "hanabi": [2, 3, 4, 5],
    "carcassonne": [2],
    "dingo": [3, 2, 4],
    "breaking_news": [3, 2, 4],
}
"""Per game, the player counts measured (the bot's figures the issue asks for first)."""


def bench_bots(only: str | None, matches: int) -> int:
    """Each game's heuristic bot over ``matches`` seeded matches per player count, on every
    core: Hanabi's self-play scores (a cooperative game) beside the random bot's, for the
    others its win share against random bots in every other seat (its seat rotating)."""
    from concurrent.futures import ProcessPoolExecutor

    from services.bots.arena import seat_rotation, self_play
    from services.bots.policies.registry import POLICIES

    policies = POLICIES
    chunks = [range(start, min(start + 50, matches)) for start in range(0, matches, 50)]
    with ProcessPoolExecutor() as pool:
        for name in [only] if only else list(BOT_TABLES):
            heuristic, random_bot = f"{name}-heuristic", f"{name}-random"
            if heuristic not in policies:
                print(f"{name}: no heuristic bot yet")
                continue
            for players in BOT_TABLES[name]:
                began = time.perf_counter()
                if name == "hanabi":
                    scores = {
                        bot: [
                            score
                            for part in pool.map(
                                self_play, [(name, bot, players, seeds) for seeds in chunks]
                            )
                            for score in part
                        ]
                        for bot in (heuristic, random_bot)
                    }
                    mine = scores[heuristic]
                    line = (
                        f"heuristic self-play mean {statistics.mean(mine):.2f}, median"
                        f" {statistics.median(mine)}, min {min(mine)}, max {max(mine)}"
                        f" ({sum(s == 25 for s in mine) / matches:.1%} perfect);"
                        f" random mean {statistics.mean(scores[random_bot]):.2f}"
                    )
                else:
                    jobs = [(name, heuristic, random_bot, players, seeds) for seeds in chunks]
                    parts = list(pool.map(seat_rotation, jobs))
                    wins = sum(p.wins * p.matches for p in parts) / matches
                    mean = sum(p.mean_score * p.matches for p in parts) / matches
                    others = sum(p.mean_others * p.matches for p in parts) / matches
                    line = (
                        f"heuristic against random wins {wins:.1%} (fair share"
                        f" {1 / players:.0%}), mean score {mean:.1f} against {others:.1f}"
                    )
                took = (time.perf_counter() - began) / matches
                print(f"{name}, {players} players, {matches} matches: {line} ({took:.3f} s each)")
    return 0
