"""The Messengers for Carcassonne: two scoring figures per player and eight messages.

This module holds what does not touch the board: the message data
(``seeds/carcassonne/messages.json``), the expansion's actions, events, state and view, and
the scoring-track rules (dark spaces, the default figure, when a message is drawn). The
engine (``evolve``, ``rules``, ``scoring``) applies them to the board; see
``seeds/carcassonne/README.md`` ("The Messengers") for the turn flow and every settled reading.

A figure's points are its running total; its space on the 50-space track is ``points % 50``
(each lap is a 50-point tile). Dark spaces are the multiples of 5, and since 50 is one, a
figure stands on a dark space exactly when its points are a multiple of 5.
"""

from __future__ import annotations

import json
import random
from typing import Any, NamedTuple

import msgspec

from services.rules.games.carcassonne.tiles import CITY, KIND_NAMES
from services.rules.games.contract import SEEDS_DIR, Rejection

SCORING_FIGURE, MESSENGER = 0, 1
FIGURES = (SCORING_FIGURE, MESSENGER)
"""Both figures are equal in the rules; the number only names them."""
BEHIND = -1
"""Stored preference: advance whichever figure is further behind (the default)."""
EDITIONS = ("C2", "C3")

MESSAGE_FILE = SEEDS_DIR / "carcassonne" / "messages.json"

SCORE_SMALLEST = "score_smallest"
EXTRA_TURN = "extra_turn"
PER_PENNANT = "per_pennant"
PER_FOLLOWER = "per_follower"
SCORE_FOLLOWER = "score_follower"


class Message(NamedTuple):
    number: int
    effect: str
    feature: int
    """Kind code of the feature the message is about, or -1."""
    points_each: int
    instead_points: int


def _load() -> dict[str, Any]:
    with MESSAGE_FILE.open(encoding="utf-8") as handle:
        return json.load(handle)


_DATA = _load()
TRACK_SPACES: int = _DATA["track_spaces"]
DARK_EVERY: int = _DATA["dark_space_every"]
MESSAGES: dict[int, Message] = {
    entry["number"]: Message(
        entry["number"],
        entry["effect"],
        KIND_NAMES.index(entry["feature"]) if "feature" in entry else -1,
        entry.get("points_each", 0),
        entry["instead_points"],
    )
    for entry in _DATA["messages"]
}
MESSAGE_NUMBERS: tuple[int, ...] = tuple(sorted(MESSAGES))


# ---------------------------------------------------------------------------- messages


class SetScoringPreference(
    msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"
):
    """Which figure advances when you score outside your own turn choices: 0 the scoring
    figure, 1 the messenger, None (the default) whichever is further behind. Any seat may
    send it at any time while the match runs."""

    figure: int | None = None


class ChooseFigure(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"):
    """Advance ``figure`` by the first of your pending scorings (one feature's points)."""

    figure: int


class Spot(msgspec.Struct, frozen=True):
    """A follower's place: the tile square and the feature (spot) of that tile."""

    x: int
    y: int
    spot: int


class CarryOutMessage(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"):
    """Do what the drawn message says. ``figure`` takes its points (None for message 4, which
    gives a turn, not points); ``follower`` is the follower message 8 scores and returns."""

    figure: int | None = None
    follower: Spot | None = None


class TakeMessagePoints(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="type"):
    """Instead of the drawn message's action, advance ``figure`` by its 2 points."""

    figure: int


class MessagesShuffled(msgspec.Struct, frozen=True, tag_field="type"):
    """The Messengers are in play. ``order`` is the message stack, top first: None in every
    redacted copy, only ``size`` stays public."""

    order: list[int] | None
    size: int
    edition: str
    zmg_alone_rule: bool


class PreferenceSet(msgspec.Struct, frozen=True, tag_field="type"):
    seat: int
    figure: int | None


class FigureAdvanced(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    """``points`` move one figure of ``seat``: the only way points reach a score in play."""

    seat: int
    figure: int
    points: int


class MessageDrawn(msgspec.Struct, frozen=True, gc=False, tag_field="type"):
    seat: int
    message: int


class MessageResolved(msgspec.Struct, frozen=True, tag_field="type"):
    """The drawn message is done (its action, or its points when ``took_points``) and goes
    face down under the stack (message 4 carried out: once its extra turn is over, below the
    messages drawn during it). ``points`` is what it gave (a FigureAdvanced follows when
    positive); ``returned`` is the follower message 8 gave back to ``seat``."""

    seat: int
    message: int
    took_points: bool
    points: int
    returned: Spot | None = None


class FiguresSummed(msgspec.Struct, frozen=True, tag_field="type"):
    """Before final scoring each player's two figures become one at their total."""

    totals: list[int]


class MessengersState(msgspec.Struct):
    """The expansion's part of the state. ``figures[2 * seat + figure]`` holds points;
    ``pending`` holds ``(kind, points)`` of the active player's scorings still waiting for a
    figure; ``moved`` has a bit per figure of the active player advanced in the current
    scoring step; ``message`` is the drawn message (0: none)."""

    edition: str
    zmg_alone_rule: bool
    stack: list[int]
    figures: list[int]
    preferences: list[int]
    pending: list[tuple[int, int]]
    moved: int = 0
    message: int = 0
    held: int = 0
    """Message 4 while its extra turn lasts (0: none): it goes under the stack after it."""
    summed: bool = False


class PendingPoints(msgspec.Struct, frozen=True):
    feature: str
    points: int


class MessengersView(msgspec.Struct, frozen=True):
    """Public: figures (per seat: scoring figure, messenger), preferences, the turn's phase,
    the scorings waiting for the active player's figure, the drawn message and how many
    messages lie face down (their order never shows)."""

    edition: str
    zmg_alone_rule: bool
    phase: str
    figures: list[list[int]]
    preferences: list[int | None]
    pending: list[PendingPoints]
    message: int | None
    messages_left: int
    figures_summed: bool


# ---------------------------------------------------------------------------- options and setup


def validate_options(options: dict[str, Any]) -> Rejection | None:
    """A message order lists every message once. (That the expansion's options need the
    expansion, and the ZMG reading C2, the catalogue's ``requires`` says, and that a sixth
    player needs a sixth colour its ``players_requirements``: ``Game.resolve_options`` checks
    both first.)"""
    order = options.get("message_order")
    if order is not None and sorted(order) != list(MESSAGE_NUMBERS):
        numbers = ", ".join(map(str, MESSAGE_NUMBERS))
        return Rejection("bad_option", f"message_order must list the messages {numbers} once each")
    return None


def shuffled_messages(options: dict[str, Any], rng: random.Random) -> MessagesShuffled:
    order = options.get("message_order")
    if order is None:
        order = list(MESSAGE_NUMBERS)
        rng.shuffle(order)
    return MessagesShuffled(
        list(order),
        len(order),
        options.get("messengers_edition") or "C3",
        bool(options.get("zmg_alone_rule")),
    )


def new_state(event: MessagesShuffled, seats: int) -> MessengersState:
    return MessengersState(
        edition=event.edition,
        zmg_alone_rule=event.zmg_alone_rule,
        stack=list(event.order or ()),
        figures=[0] * (2 * seats),
        preferences=[BEHIND] * seats,
        pending=[],
    )


def copy_state(state: MessengersState) -> MessengersState:
    return msgspec.structs.replace(
        state,
        stack=list(state.stack),
        figures=list(state.figures),
        preferences=list(state.preferences),
        pending=list(state.pending),
    )


# ---------------------------------------------------------------------------- the track


def preferred_figure(figures: list[int], preferences: list[int], seat: int) -> int:
    """The figure a seat's standing preference advances; behind: ties go to the scoring
    figure."""
    preference = preferences[seat]
    if preference != BEHIND:
        return preference
    return MESSENGER if figures[2 * seat + 1] < figures[2 * seat] else SCORING_FIGURE


def draws_message(state: MessengersState, figures: list[int], seat: int, moved: int) -> bool:
    """Whether a figure of ``seat`` among the ``moved`` bits stands on a dark space in
    ``figures`` (and, under the ZMG reading, no other player's figure shares its space)."""
    for figure in FIGURES:
        if moved >> figure & 1:
            points = figures[2 * seat + figure]
            if points % DARK_EVERY == 0 and (
                not state.zmg_alone_rule or _alone(figures, seat, points)
            ):
                return True
    return False


def _alone(figures: list[int], seat: int, points: int) -> bool:
    space = points % TRACK_SPACES
    return all(
        other >> 1 == seat or held % TRACK_SPACES != space for other, held in enumerate(figures)
    )


# ---------------------------------------------------------------------------- message effects


class OwnFollower(NamedTuple):
    """One follower of the active player as the messages see it (built by the engine)."""

    spot: Spot
    kind: int
    feature: int
    """An id shared by the followers on one feature."""
    points: int
    """The feature's points as at final scoring."""
    majority: bool
    """Whether the player has the most followers there (ties included)."""
    pennants: int


def can_carry_out(message: Message, followers: list[OwnFollower], tiles_left: int) -> bool:
    """Messages 1-3 need a follower on such a feature, 4 a land tile left, 8 a follower on
    the board; 5-7 always count (possibly nothing)."""
    effect = message.effect
    if effect == SCORE_SMALLEST:
        return any(follower.kind == message.feature for follower in followers)
    if effect == EXTRA_TURN:
        return tiles_left > 0
    if effect == SCORE_FOLLOWER:
        return bool(followers)
    return True


def message_points(
    message: Message, followers: list[OwnFollower], chosen: OwnFollower | None
) -> int:
    """Points of a carried-out message (``chosen``: message 8's follower)."""
    effect = message.effect
    if effect == SCORE_SMALLEST:
        return min(follower.points for follower in followers if follower.kind == message.feature)
    if effect == PER_PENNANT:
        cities = {f.feature: f.pennants for f in followers if f.kind == CITY}
        return message.points_each * sum(cities.values())
    if effect == PER_FOLLOWER:
        return message.points_each * sum(1 for f in followers if f.kind == message.feature)
    if effect == SCORE_FOLLOWER and chosen is not None:
        return chosen.points if chosen.majority else 0
    return 0


def message_view(state: MessengersState, seats: int, phase: str) -> MessengersView:
    figures = state.figures
    return MessengersView(
        edition=state.edition,
        zmg_alone_rule=state.zmg_alone_rule,
        phase=phase,
        figures=[figures[2 * seat : 2 * seat + 2] for seat in range(seats)],
        preferences=[None if p == BEHIND else p for p in state.preferences],
        pending=[PendingPoints(KIND_NAMES[kind], points) for kind, points in state.pending],
        message=state.message or None,
        messages_left=len(state.stack),
        figures_summed=state.summed,
    )
