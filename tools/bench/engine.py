"""Benchmarks in this process, no service running: random playouts of one game on one core
(``bench engine``), and the heuristic bots against random ones on every core (``bench bots``)."""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Any

from tools.bench.common import DEFAULT_PLAYERS


def bench_engine(
    game_name: str, players: int | None, games: int, seed: int, option: list[str] | None = None
) -> int:
    """Random games on one core, a uniform choice among the legal actions at every step;
    ``option`` holds table options as ``NAME=VALUE`` (VALUE as JSON)."""
    from services.rules.games.playout import random_playout
    from services.rules.games.registry import GAMES

    game = GAMES[game_name]
    seats = players or DEFAULT_PLAYERS.get(game_name, game.min_players)
    options = dict(_option(text) for text in option or ())
    rng = random.Random(seed)
    moves = 0
    started = time.perf_counter()
    for _ in range(games):
        moves += random_playout(game, seats, rng, options)[2]
    elapsed = time.perf_counter() - started
    with_options = f" with {json.dumps(options)}" if options else ""
    print(
        f"{game_name}{with_options}: {games} random {seats}-player games in {elapsed:.2f} s on "
        f"one core: {games / elapsed:,.0f} games/s, {moves / elapsed:,.0f} moves/s "
        f"({moves / games:.1f} moves per game)"
    )
    if game_name == "carcassonne":
        _carcassonne_legal_moves(game, options)
    return 0


def _option(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` as the option's name and its value read as JSON (a bare word as text)."""
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def _carcassonne_legal_moves(
    game: Any, options: dict[str, Any], boards: int = 20, repeats: int = 200
) -> None:
    """All legal moves (placements with follower spots) of the drawn tile on 60-tile boards:
    the first call on each board, and the median of repeated calls (warm caches)."""
    from services.rules.games.playout import play_until

    first: list[float] = []
    repeated: list[float] = []
    for seed in range(boards):
        state = play_until(game, 2, random.Random(seed), lambda s: len(s.codes) >= 60, options)
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


def timed_self_play(job: tuple[str, str, int, range]) -> tuple[list[int], int, float]:
    """``(game, bot, players, seeds)``: the scores of ``arena.self_play``, with the decisions
    the bot made and the CPU seconds they took (this process's, so other load is left out).
    One picklable job, for a process pool."""
    from services.bots.arena import self_play, timed_policy
    from services.bots.policies.registry import POLICIES

    timed, spent = timed_policy(POLICIES[job[1]])
    return self_play(job, timed), int(spent[0]), spent[1]


def _self_play_line(pool: Any, name: str, players: int, matches: int, chunks: list[range]) -> str:
    """Hanabi's figure: the heuristic's self-play score (mean with its standard error, so two
    runs can be told apart), its CPU per decision, and the random bot's mean beside it."""
    parts = list(
        pool.map(timed_self_play, [(name, f"{name}-heuristic", players, c) for c in chunks])
    )
    mine = [score for part in parts for score in part[0]]
    decisions, cpu = sum(part[1] for part in parts), sum(part[2] for part in parts)
    randoms = [
        score
        for part in pool.map(
            timed_self_play, [(name, f"{name}-random", players, c) for c in chunks]
        )
        for score in part[0]
    ]
    error = statistics.stdev(mine) / len(mine) ** 0.5 if len(mine) > 1 else 0.0
    return (
        f"heuristic self-play mean {statistics.mean(mine):.2f} (standard error {error:.2f}),"
        f" median {statistics.median(mine)}, min {min(mine)}, max {max(mine)}"
        f" ({sum(s == 25 for s in mine) / matches:.1%} perfect,"
        f" {sum(s == 0 for s in mine) / matches:.1%} struck out),"
        f" {cpu / decisions * 1e3:.2f} ms CPU per decision;"
        f" random mean {statistics.mean(randoms):.2f}"
    )


def bench_bots(
    only: str | None, matches: int, players: int | None = None, option: list[str] | None = None
) -> int:
    """Each game's heuristic bot over ``matches`` seeded matches (seeds 0 to matches - 1) per
    player count (``players``, or each of ``BOT_TABLES``), on every core: Hanabi's self-play
    scores (a cooperative game) beside the random bot's, for the others its win share against
    random bots in every other seat (its seat rotating) and its CPU per decision; ``option``
    holds table options as ``NAME=VALUE`` (VALUE as JSON), for the other games' tables."""
    from concurrent.futures import ProcessPoolExecutor

    from services.bots.arena import seat_rotation
    from services.bots.policies.registry import POLICIES

    policies = POLICIES
    options = dict(_option(text) for text in option or ())
    chunks = [range(start, min(start + 50, matches)) for start in range(0, matches, 50)]
    with ProcessPoolExecutor() as pool:
        for name in [only] if only else list(BOT_TABLES):
            heuristic, random_bot = f"{name}-heuristic", f"{name}-random"
            if heuristic not in policies:
                print(f"{name}: no heuristic bot yet")
                continue
            for count in [players] if players else BOT_TABLES[name]:
                began = time.perf_counter()
                if name == "hanabi":
                    line = _self_play_line(pool, name, count, matches, chunks)
                else:
                    jobs = [
                        (name, heuristic, random_bot, count, seeds, options) for seeds in chunks
                    ]
                    parts = list(pool.map(seat_rotation, jobs))
                    wins = sum(p.wins * p.matches for p in parts) / matches
                    mean = sum(p.mean_score * p.matches for p in parts) / matches
                    others = sum(p.mean_others * p.matches for p in parts) / matches
                    decisions, cpu = sum(p.decisions for p in parts), sum(p.cpu_s for p in parts)
                    line = (
                        f"heuristic against random wins {wins:.1%} (fair share"
                        f" {1 / count:.0%}), mean score {mean:.1f} against {others:.1f},"
                        f" {cpu / decisions * 1e3:.2f} ms CPU per decision"
                    )
                took = (time.perf_counter() - began) / matches
                table = f" with {json.dumps(options)}" if options and name != "hanabi" else ""
                print(
                    f"{name}{table}, {count} players, {matches} matches: {line} ({took:.3f} s each)"
                )
    return 0
