"""Record seeded random matches with the engines of a checkout, as its release stored them.

Run with a release's checkout first on the path (``git worktree add /tmp/old-<sha> <sha>``,
then ``PYTHONPATH=/tmp/old-<sha> .venv/bin/python tests/.../recorded/record.py <sha> OUT``): it
plays random legal actions through that release's own engines and writes, per match, the
playtable match file and the row the match service stored (state bytes, ``to_move``, status
and result). It uses only what every release since the four games has had (``load_games``,
``GameCodec``), so the same script records every one of them.
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

from services.rules.engine import GameCodec
from services.rules.games import load_games

GAMES = load_games()


def names(events: list) -> list[str]:
    return [type(event).__name__ for event in events]


def extra_turn_began(events: list) -> bool:
    """Message 4 carried out: its extra turn begins."""
    return any(
        type(e).__name__ == "MessageResolved" and e.message == 4 and not e.took_points
        for e in events
    )


def choose(rng: random.Random, actions: list):
    """A random legal action, leaning to those that bring The Messengers' messages: a tile
    with a follower on it, a message carried out (random play draws a message a match)."""
    leaning = [
        action
        for action in actions
        if getattr(action, "follower", None) is not None
        or type(action).__name__ == "CarryOutMessage"
    ]
    return rng.choice(leaning if leaning and rng.random() < 0.8 else actions)


def play(game_name: str, seats: int, seed: int, options: dict, stop=None):
    """(log with seats, state) of one seeded random match, to its end or to ``stop``."""
    game = GAMES[game_name]
    rng = random.Random(seed)
    resolved = game.resolve_options(options, seats)
    setup = game.setup(resolved, seats, rng)
    log = [(event, None) for event in setup]
    state = game.fold(setup)
    while game.result(state) is None:
        seat = rng.choice(game.to_move(state))
        events = game.decide(state, seat, choose(rng, game.legal_actions(state, seat)))
        state = game.fold(events, state)
        log += [(event, seat) for event in events]
        if stop is not None and game.result(state) is None and stop(events):
            break
    return resolved, log, state


def document(sha: str, game_name: str, seats: int, seed: int, options: dict, why: str, stop=None):
    game = GAMES[game_name]
    codec = GameCodec(game)
    resolved, log, state = play(game_name, seats, seed, options, stop)
    progress = codec.progress(state)
    result = progress.result
    return {
        "recorded_by": sha,
        "why": why,
        "seed": seed,
        "match": {
            "format": "playtable-match",
            "format_version": 1,
            "game": game_name,
            "options": resolved,
            "players": [f"P{seat}" for seat in range(seats)],
            "status": "running" if result is None else "finished",
            "result": result,
            "events": [
                {
                    "version": version,
                    "type": type(event).__name__,
                    "data": json.loads(codec.json.encode(event)),
                    "seat": seat,
                }
                for version, (event, seat) in enumerate(log, 1)
            ],
        },
        "stored": {
            "version": len(log),
            "state": base64.b64encode(progress.state).decode(),
            "to_move": progress.to_move,
        },
    }


def called(events: list) -> bool:
    """A story begins: Breaking News was called."""
    return "BreakingNewsCalled" in names(events)


def find(game_name, seats, options, wanted, seeds=range(400), stop=None):
    for seed in seeds:
        _, log, _ = play(game_name, seats, seed, options, stop)
        if wanted([event for event, _ in log]):
            return seed
    raise LookupError(f"{game_name}: no seed shows it")


SHORT_GAME = ["D", "L", "W", "F", "S", "V", "D", "A", "W"]


def main(sha: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # message 4 on top of the message stack: random play draws about one message a match
    m = {"messengers": True, "message_order": [4, 8, 5, 6, 3, 2, 1, 7]}
    news = {"stopwatch": True}
    plans = [
        ("hanabi", 3, 1, {}, "finished", None),
        ("hanabi", 2, 2, {}, "running", lambda events: "CardDrawn" in names(events)),
        ("dingo", 3, 1, {}, "finished", None),
        ("dingo", 4, 2, {}, "running", lambda events: len(events) > 2),
        ("breaking_news", 3, 1, news, "finished", None),
        ("breaking_news", 3, find("breaking_news", 3, news, called), news, "running", called),
        ("carcassonne", 2, find("carcassonne", 2, m, extra_turn_began), m, "finished", None),
        (
            "carcassonne",
            3,
            find("carcassonne", 3, m, extra_turn_began),
            m,
            "running",
            extra_turn_began,
        ),
        # eight tiles after the start: message 4's extra turn places the last one (the first
        # seed of 600 whose match ends so, at 8 to 24 tiles)
        ("carcassonne", 2, 3, {**m, "tile_order": SHORT_GAME}, "ended-in-extra-turn", None),
    ]
    for game_name, seats, seed, options, why, stop in plans:
        doc = document(sha, game_name, seats, seed, options, why, stop)
        name = f"{sha[:7]}-{game_name}-{why}.json"
        (out / name).write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(name, seed, len(doc["match"]["events"]), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
