"""The heuristic bot of The Dingo Ate the Baby: a one-move look-ahead on the ranch values.

Each legal action is simulated on what the seat sees (every ranch, the discard pile, the draw
pile's size): the card's value joins its ranch, an effect takes its target's value off the
target's ranch, a destroyed protected card leaves the own ranch, and every removed or
discarded card fills the discard pile. The resulting ranch values are then judged:

- if the action ends the day (the discard pile reaches its limit, or the draw pile cannot
  refill the hand), the day's points are exact: one per player beaten, nothing over target;
- otherwise the points the table would score if the day ended now are weighed, the more the
  fuller the discard pile, against keeping the own ranch close under the target (room to
  grow) and out of reach of a push over it.

Points of others count against the bot, the game's leader most, so effects and plays onto
opponents' ranches that cost the leader points are taken; an opponent already over the
target is left there. A moon is worth playing to the right of a valuable own card (it guards
that card from effects). Ties between equally good actions go to ``rng``.
"""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.dingo.public import day_points

View = dict[str, Any]
Action = dict[str, Any]


def _outcome(view: View, action: Action) -> tuple[list[int], bool, int] | None:
    """The ranch values after ``action``, whether it ends the day, and the discard count."""
    me = view["seat"]
    ranches = view["ranches"]
    values = [ranch["value"] for ranch in ranches]
    discards = len(view["discards"])
    limit = view["discard_limit"]
    pile = view["draw_pile"]
    kind = action["type"]
    if kind == "DiscardCard":
        discards += 1
        return values, discards >= limit or pile < 1, discards
    if kind == "DestroyProtected":
        values[me] -= ranches[me]["cards"][0]["value"]
        discards += 1
        return values, discards >= limit, discards
    if kind != "PlayCard":
        return None
    card = next((card for card in view["hand"] or () if card["id"] == action["card"]), None)
    if card is None:
        return None
    values[action["ranch"]] += card["value"]
    target = action.get("target")
    if target is not None:
        for ranch in ranches:
            hit = next((c for c in ranch["cards"] if c["id"] == target), None)
            if hit is not None:
                values[ranch["seat"]] -= hit["value"]
                break
        discards += 1
        if discards >= limit:
            return values, True, discards
    if action.get("destroy_protected"):
        values[me] -= ranches[me]["cards"][0]["value"]
        discards += 1
        if discards >= limit:
            return values, True, discards
    return values, pile < 1, discards


def _weights(view: View) -> list[float]:
    """How much each other seat's points count against the bot: the leader most."""
    me, totals = view["seat"], view["totals"]
    others = [seat for seat in range(view["seats"]) if seat != me]
    weights = [0.0] * view["seats"]
    lead = max(totals[seat] for seat in others)
    for seat in others:
        weights[seat] = 0.5 if totals[seat] == lead else 0.25
        if totals[seat] >= totals[me] + 3:
            weights[seat] += 0.25
    return weights


def _reach(view: View, seat: int) -> int:
    """How many opponents' hand cards could land on ``seat``'s ranch: its open colours."""
    return len(view["ranches"][seat]["open_colours"])


def _standing(view: View, values: list[int], discards: int) -> float:
    """How good ``values`` are for the bot while the day goes on."""
    me, target = view["seat"], view["target"]
    points = day_points(values, target)
    weights = _weights(view)
    settled = min(1.0, discards / view["discard_limit"])
    now = points[me] - sum(w * p for w, p in zip(weights, points, strict=True))
    mine = values[me]
    if mine > target:
        room = -1.0 - 0.3 * (mine - target)
    else:
        gap = target - mine
        room = 1.0 - gap / target
        if gap <= 1:
            # Nearly full: any opponent's card of an open colour pushes the ranch over.
            room -= 0.15 * _reach(view, me) * (1 - settled)
    return (0.4 + 0.6 * settled) * now + (1.6 - settled) * room


def _moon_bonus(view: View, action: Action) -> float:
    """A moon played to the right of a valuable own card guards it from effects."""
    if action["type"] != "PlayCard" or action["ranch"] != view["seat"]:
        return 0.0
    card = next(card for card in view["hand"] if card["id"] == action["card"])
    if not card.get("guards_left"):
        return 0.0
    cards = view["ranches"][view["seat"]]["cards"]
    if len(cards) < 2:
        return 0.0  # the protected card needs no guard
    return 0.04 * cards[-1]["value"]


def score(view: View, action: Action) -> float:
    """The bot's judgement of one legal action (higher is better)."""
    outcome = _outcome(view, action)
    if outcome is None:
        return -1e9
    values, ends, discards = outcome
    if ends:
        me = view["seat"]
        points = day_points(values, view["target"])
        weights = _weights(view)
        return 10.0 + 3.0 * (points[me] - sum(w * p for w, p in zip(weights, points, strict=True)))
    return 10.0 + _standing(view, values, discards) + _moon_bonus(view, action)


def heuristic(view: View, actions: list[Action], rng: random.Random) -> Action:
    """The best-judged legal action; equally good ones are chosen between at random."""
    scored = [(score(view, action), rng.random(), index) for index, action in enumerate(actions)]
    return actions[max(scored)[2]]
