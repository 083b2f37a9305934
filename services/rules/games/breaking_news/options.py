"""Breaking News' per-match options and its setup: the shuffles and the starting layout."""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.breaking_news.cards import (
    ELEMENT_COUNT,
    LANGUAGE_CODE,
    MODES,
    OBJECT_COUNT,
    OPEN_OBJECTS,
    START_HAND,
    TIEBREAKS,
    cell_of,
    xy_of,
)
from services.rules.games.breaking_news.events import (
    ElementDrawn,
    Event,
    GameStarted,
    ObjectDrawn,
    ObjectOpened,
    StartingCardPlaced,
    StartingCardSetAside,
)
from services.rules.games.breaking_news.evolve import evolve, fits
from services.rules.games.breaking_news.state import BreakingNewsState
from services.rules.games.breaking_news.versions import RULES
from services.rules.games.contract import (
    OptionSpec,
    Rejection,
)

OPTIONS = (
    OptionSpec(
        name="mode",
        title="Rules",
        type="enum",
        default="beginner",
        description="beginner: the basic rules. advanced: the middle card of a completed chain "
        "is turned face down, and a later chain may have only one of its cards next to a "
        "face-down card.",
        choices=list(MODES),
    ),
    OptionSpec(
        name="tiebreak",
        title="Tied reporters",
        type="enum",
        default="vote",
        description="vote: the other players choose the most interesting story of the tied "
        "players (German rules). objects_in_hand: most object cards in hand wins (Italian "
        "rules).",
        choices=list(TIEBREAKS),
    ),
    OptionSpec(
        name="foreign_language_bonus",
        title="Foreign-language bonus",
        type="bool",
        default=False,
        description="+1 point for a story told in a language other than the teller's own. "
        "Needs each seat's home language.",
    ),
    OptionSpec(
        name="home_languages",
        title="Home languages",
        type="list[str]",
        default=None,
        description="Each seat's own language as an ISO 639 code (e.g. de, it, lld), seat by "
        "seat: the foreign-language bonus counts against it.",
    ),
    OptionSpec(
        name="stopwatch",
        title="Timed stories",
        type="bool",
        default=False,
        description="The server times each story: under 15 s costs a point, over 30 s earns "
        "one; a story interrupted by more than 3 s of silence completes nothing.",
    ),
    OptionSpec(
        name="element_order",
        title="Stacked element deck (secret)",
        type="list[int]",
        default=None,
        description="Replay a known game: every element card id "
        f"0-{ELEMENT_COUNT - 1} once, in draw order. Default: shuffled.",
        secret=True,
    ),
    OptionSpec(
        name="object_order",
        title="Stacked object deck (secret)",
        type="list[int]",
        default=None,
        description="Replay a known game: every object card id "
        f"0-{OBJECT_COUNT - 1} once, in draw order. Default: shuffled.",
        secret=True,
    ),
)


def _order_problem(name: str, order: list[int] | None, size: int) -> str | None:
    if order is None or sorted(order) == list(range(size)):
        return None
    return f"option {name!r} must list every id 0-{size - 1} exactly once"


def validate_options(options: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
    """Check the deck orders and the home languages the language bonus needs."""
    for name, size in (("element_order", ELEMENT_COUNT), ("object_order", OBJECT_COUNT)):
        problem = _order_problem(name, options[name], size)
        if problem:
            return Rejection("bad_option", problem)
    languages = options["home_languages"]
    if languages is not None:
        if len(languages) != seats:
            return Rejection(
                "bad_option", f"option 'home_languages' needs one language per seat ({seats})"
            )
        if not all(LANGUAGE_CODE.fullmatch(code) for code in languages):
            return Rejection(
                "bad_option", "option 'home_languages': codes are 2-3 lowercase letters"
            )
    elif options["foreign_language_bonus"]:
        return Rejection(
            "bad_option",
            "the foreign-language bonus needs each seat's own language: "
            "set option 'home_languages'",
        )
    return options


# --- Setup ----------------------------------------------------------------------------------


def setup(options: dict[str, Any], seats: int, rng: random.Random) -> list[Event]:
    """Shuffle both decks (or take the explicit orders), then lay out and deal as the seed says."""
    elements = options["element_order"]
    objects = options["object_order"]
    if elements is None:
        elements = list(range(ELEMENT_COUNT))
        rng.shuffle(elements)
    if objects is None:
        objects = list(range(OBJECT_COUNT))
        rng.shuffle(objects)
    started = GameStarted(
        seats=seats,
        mode=options["mode"],
        tiebreak=options["tiebreak"],
        foreign_language_bonus=options["foreign_language_bonus"],
        stopwatch=options["stopwatch"],
        home_languages=options["home_languages"],
        element_deck=list(elements),
        object_deck=list(objects),
        rules_version=RULES.current,
    )
    state = evolve(None, started)
    events: list[Event] = [started]

    def record(event: Event) -> None:
        events.append(event)
        evolve(state, event)

    for seat in range(seats):
        for _ in range(len(state.element_deck)):
            card = state.element_deck[0]
            cell = _starting_cell(state, card)
            if cell is not None:
                record(StartingCardPlaced(seat, card, *xy_of(cell)))
                break
            record(StartingCardSetAside(card))
        else:
            raise ValueError("no element card fits the starting layout")
    for seat in range(seats):
        for _ in range(START_HAND):
            record(ElementDrawn(seat, state.element_deck[0]))
    for _ in range(OPEN_OBJECTS):
        record(ObjectOpened(state.object_deck[0]))
    for seat in range(seats):
        record(ObjectDrawn(seat, state.object_deck[0]))
    return events


def _starting_cell(state: BreakingNewsState, card: int) -> int | None:
    """The first fitting cell: the first card's row nearest end first, then by distance."""
    if not state.grid:
        return cell_of(0, 0)

    def preference(cell: int) -> tuple[int, int, int, int]:
        x, y = xy_of(cell)
        return abs(y), abs(x), -x, -y

    for cell in sorted(state.open_cells, key=preference):
        if fits(card, state.open_cells[cell]):
            return cell
    return None
