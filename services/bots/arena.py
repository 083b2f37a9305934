"""Bots playing whole matches in-process through the rules engines, for measuring them.

Each seat's policy is shown exactly what the API would show that seat (``view`` and
``legal_actions`` as JSON) and its answer goes through ``decide`` like a submitted move, so a
policy that peeks or cheats cannot do so here either.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from services.bots.policies import Policy
from services.bots.policies.registry import POLICIES
from services.rules.games.contract import Game, Outcome, Rejection
from services.rules.games.registry import GAMES


class IllegalChoice(Exception):
    """A policy answered an action the rules refuse."""


def play_match(
    game: Game,
    policies: Sequence[Policy],
    seed: int,
    options: dict[str, Any] | None = None,
    *,
    max_moves: int = 100_000,
) -> Outcome:
    """One seeded match with ``policies[seat]`` playing each seat; its outcome."""
    seats = len(policies)
    resolved = game.resolve_options(options or {}, seats)
    if isinstance(resolved, Rejection):
        raise ValueError(resolved.detail)
    rng = random.Random(seed)
    state = game.fold(game.setup(resolved, seats, random.Random(seed)))
    decoder = msgspec.json.Decoder(game.action_type)
    for _ in range(max_moves):
        outcome = game.result(state)
        if outcome is not None:
            return outcome
        seat = game.to_move(state)[0]
        view = msgspec.to_builtins(game.view(state, seat))
        actions = msgspec.to_builtins(game.legal_actions(state, seat))
        chosen = policies[seat](view, actions, rng)
        try:
            action = decoder.decode(msgspec.json.encode(chosen))
        except msgspec.ValidationError as error:
            raise IllegalChoice(
                f"{game.name} seat {seat}: {chosen} is no action: {error}"
            ) from None
        events = game.decide(state, seat, action)
        if isinstance(events, Rejection):
            raise IllegalChoice(f"{game.name} seat {seat}: {chosen} refused: {events.detail}")
        state = game.fold(events, state)
    raise RuntimeError(f"{game.name}: no end after {max_moves} moves")


class Standing(msgspec.Struct, frozen=True):
    """How one bot did over some matches: its share of wins (a shared win counts as a share)
    and its average score, and the average score of the other seats; the decisions it made
    and the CPU seconds they took (this process's, so other load is left out)."""

    matches: int
    wins: float
    mean_score: float
    mean_others: float
    decisions: int = 0
    cpu_s: float = 0.0


def timed_policy(policy: Policy) -> tuple[Policy, list[float]]:
    """``policy``, counting its decisions and the CPU seconds they took (this process's, so
    other load is left out) into the list returned beside it: ``[decisions, seconds]``."""
    spent = [0.0, 0.0]

    def timed(view: dict[str, Any], actions: list[dict[str, Any]], rng: random.Random) -> Any:
        began = time.process_time()
        choice = policy(view, actions, rng)
        spent[0] += 1
        spent[1] += time.process_time() - began
        return choice

    return timed, spent


def seat_rotation(job: tuple[str, str, str, int, range, dict[str, Any]]) -> Standing:
    """``(game, bot, against, players, seeds, options)``: ``bot`` in one seat, ``against`` in
    the others, the bot's seat rotating with the seed, at tables with ``options``. One
    picklable job, for a process pool."""
    name, bot, against, players, seeds, options = job
    game = GAMES[name]
    timed, spent = timed_policy(POLICIES[bot])

    wins = scores = others = 0.0
    for seed in seeds:
        seat = seed % players
        table = [POLICIES[against]] * players
        table[seat] = timed
        outcome = play_match(game, table, seed, options)
        if seat in outcome.winners:
            wins += 1 / len(outcome.winners)
        scores += outcome.scores[seat]
        others += sum(s for n, s in enumerate(outcome.scores) if n != seat) / (players - 1)
    count = len(seeds)
    return Standing(count, wins / count, scores / count, others / count, int(spent[0]), spent[1])


def self_play(job: tuple[str, str, int, range], policy: Policy | None = None) -> list[int]:
    """``(game, bot, players, seeds)``: the first seat's score in each seeded match the bot
    (or ``policy`` standing for it, say the bot timed) plays against itself (a cooperative
    game's score is everyone's)."""
    name, bot, players, seeds = job
    playing = policy or POLICIES[bot]
    return [play_match(GAMES[name], [playing] * players, seed).scores[0] for seed in seeds]
