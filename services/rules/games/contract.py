"""The engine contract every game module implements (see docs/architecture.md, "Game engines").

A game is a bundle of small pure functions over msgspec Structs, in the spirit of OpenSpiel:

- ``setup(options, seats, rng) -> list[Event]``: every chance outcome (shuffles, dice) is
  decided here or in ``decide`` and recorded *in* the events, so a replay never needs a random
  generator. The first event creates the state: ``evolve(None, events[0])``.
- ``decide(state, seat, action) -> list[Event] | Rejection``: never mutates ``state``.
- ``evolve(state, event) -> state``: applies one stored event. It may update ``state`` in place
  and return it (the caller owns the state it folds); it never fails on a stored event.
- ``legal_actions(state, seat) -> list[Action]``: every action ``decide`` would accept.
- ``to_move(state) -> list[int]``: the seats the game waits on (empty once finished): their
  clocks run and their bots are asked. ``may_act(state)``, where a game has it, adds the
  seats that may act without being waited on (a Breaking News listener reporting silence).
- ``view(state, seat | None) -> Struct``: what that seat (``None``: a spectator) may see.
- ``redact(event, seat | None) -> Struct``: the event as that seat may see it.
- ``result(state) -> Outcome | None``: ``None`` while the match runs.
- ``rules``: its rules versions (``RulesVersions``): the first event records the one a match
  is played under, and the engine keeps every older one a recorded match needs.

Actions, events and states are tagged msgspec Structs (``tag_field="type"``), so the same
bytes travel over HTTP, Redis and into Postgres. Games import nothing but the standard library,
msgspec and their own data under ``seeds/``.

This module, ``registry`` and each game's ``public`` module are the games' published interface
to other services; a game's other modules are its engine, for the rules service alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from shared.domain.rules_api import OptionType, PlayersRequirement

SEEDS_DIR = Path(__file__).resolve().parents[3] / "seeds"
"""Where authored game data lives (tile lists, card lists)."""


def struct_tags(type_: Any) -> list[str]:
    """The ``type`` tags of a tagged Struct, or of each tagged Struct of a union."""
    info = msgspec.inspect.type_info(type_)
    members = info.types if isinstance(info, msgspec.inspect.UnionType) else (info,)
    return [
        member.tag
        for member in members
        if isinstance(member, msgspec.inspect.StructType) and member.tag is not None
    ]


class OptionSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One per-match option, as the catalogue shows it to clients building a setup screen."""

    name: str
    title: str
    """What a person calls it: a setup screen's label (``name`` is what a request sends)."""
    type: OptionType
    default: Any
    description: str
    """What it does, in a sentence or two: a setup screen's help."""
    choices: list[Any] | None = None
    minimum: int | None = None
    maximum: int | None = None
    secret: bool = False
    """Hidden from everyone but the table's creator while the match runs (e.g. a deck order)."""
    requires: dict[str, Any] = {}
    """The values other options must have for this one to be set (to other than its default):
    a setup screen offers it only then, and a table setting it without them is refused."""


class Rejection(msgspec.Struct, frozen=True):
    """Why an action is refused. ``detail`` must never reveal hidden information."""

    code: str
    detail: str


COMMON_REFUSALS: Mapping[str, str] = {
    "game_over": "The match is over: no move is taken any more.",
    "not_your_turn": "Another seat is to move: wait for your turn.",
    "unknown_action": (
        "The action is not one the game takes with this table's options: send one of its actions."
    ),
}
"""The refusals of play of the code every game shares (``decide_in_turn``), documented once; a
game may answer them from its own rules too, with the same meaning. Those of
``Game.resolve_options`` are not rules of play: ``shared/edge/problems.py`` documents them."""


@dataclass(frozen=True, slots=True)
class RulesVersions:
    """A game's rules versions: a match is played and folded, for good, by the version its
    first event records (``rules_version``), so a fix to how events fold never rewrites a match
    already recorded. Changing a rule means a new version here, the new behaviour under it and
    the old one kept for the matches that recorded (or, before versions, played) the old one."""

    current: int
    """What a new match records and plays under."""
    changes: Mapping[int, str]
    """Every version the engine still folds, oldest first, with what it changed."""
    unversioned: str
    """How a log recorded before versions (no ``rules_version``) is folded, and why."""
    played_before_versions: int | None = None
    """The version a state recorded before versions plays on by (the last release's), where
    the state carries its version: a state records none for it, so the states that release
    stores and ours are alike (in a rolling upgrade its processes decide moves on our states
    too, and drop the fields they do not know)."""

    @property
    def oldest(self) -> int:
        return min(self.changes)

    def problem(self, version: int | None) -> str | None:
        """Why a recorded ``version`` is not one this engine folds (None: it is, or absent)."""
        if version is None or version in self.changes:
            return None
        return f"no rules version {version} ({self.oldest} to {self.current})"

    def in_state(self, recorded: int | None) -> int | None:
        """The version a state carries for a match that recorded ``recorded``."""
        return None if recorded == self.played_before_versions else recorded


class Outcome(msgspec.Struct, frozen=True):
    """The final result: one score per seat, and the winning seats (all of them if shared)."""

    scores: list[int]
    winners: list[int]
    reason: str = "finished"


@dataclass(frozen=True, slots=True)
class Game:
    """A game module's entry in the catalogue: its metadata and its pure functions."""

    name: str
    title: str
    min_players: int
    max_players: int
    options: tuple[OptionSpec, ...]
    action_type: Any
    event_type: Any
    redacted_event_type: Any
    """Every event as ``redact`` may return it: what clients see of the log."""
    state_type: type
    view_type: type
    """What ``view`` returns."""
    setup: Callable[[dict[str, Any], int, random.Random], list[Any]]
    decide: Callable[[Any, int, Any], list[Any] | Rejection]
    evolve: Callable[[Any, Any], Any]
    legal_actions: Callable[[Any, int], list[Any]]
    to_move: Callable[[Any], list[int]]
    view: Callable[[Any, int | None], Any]
    redact: Callable[[Any, int | None], Any]
    result: Callable[[Any], Outcome | None]
    rules: RulesVersions
    """The rules versions it folds (see ``RulesVersions``)."""
    refusals: Mapping[str, str]
    """Every code the game's own rules refuse with (beyond ``COMMON_REFUSALS``) and when, with
    what to do instead: the API contract lists each one as a problem type."""
    validate_options: Callable[[dict[str, Any], int], dict[str, Any] | Rejection] | None = None
    players_requirements: tuple[PlayersRequirement, ...] = ()
    """The numbers of players between ``min_players`` and ``max_players`` taken only with some
    options: the catalogue shows them and ``resolve_options`` refuses them without."""
    description: str = ""
    cooperative: bool = False
    """The seats win or lose together: a seat that forfeits loses the match for all."""
    sample_tables: tuple[tuple[int, Mapping[str, Any]], ...] = ()
    """Seat counts and options of tables whose matches show what random play seldom reaches
    (a Carcassonne tile that fits nowhere): the event samples play them too."""
    may_act: Callable[[Any], list[int]] | None = None
    """The seats with legal actions now, where they are more than ``to_move``: the match
    service keeps every such seat's actions with the state it decided."""
    deal_problem: Callable[[list[Any], dict[str, Any], int], str | None] | None = None
    """Why an imported file's set-up events (before the first move) are not a deal of its
    resolved options to its seats, if they are not: a forged deal is refused by name."""

    stored_to_move: Callable[[Any, list[Any]], list[list[int]]] | None = None
    """Every ``to_move`` a release may have stored with a state folded from a log, where a
    rules version changed it and no event tells which a log recorded before versions played."""
    readings: Callable[[list[Any]], list[list[Any]]] | None = None
    """The ways a whole stored log may be folded, the engine's own first: a log recorded
    before versions may have been played under versions no event tells apart, each given, in
    memory, what tells the evolve functions which (an upcast). The engine folds a stored log
    from its start by the first (a cold snapshot, an import); ``playtable verify`` accepts
    stored rows that equal the fold of any. None: the log as it is, its only reading."""

    def as_folded(self, events: list[Any]) -> list[Any]:
        """The log as the engine folds it from its start (its first reading)."""
        return events if self.readings is None else self.readings(events)[0]

    def all_readings(self, events: list[Any]) -> list[list[Any]]:
        """Every way the log may be folded (see ``readings``), the engine's own first."""
        return [events] if self.readings is None else self.readings(events)

    def stored_to_moves(self, state: Any, events: list[Any]) -> list[list[int]]:
        """The ``to_move`` columns a stored row of ``state``, folded from ``events``, may hold
        (see ``stored_to_move``)."""
        if self.stored_to_move is None:
            return [self.to_move(state)]
        return self.stored_to_move(state, events)

    def acting(self, state: Any, to_move: list[int]) -> list[int]:
        """The seats that may act at ``state``, whose seats to move are ``to_move``."""
        return to_move if self.may_act is None else self.may_act(state)

    def fold(self, events: Sequence[Any], state: Any = None) -> Any:
        """Replay events onto ``state`` (``None`` starts from nothing)."""
        evolve = self.evolve
        for event in events:
            state = evolve(state, event)
        return state

    def resolve_options(self, given: dict[str, Any], seats: int) -> dict[str, Any] | Rejection:
        """Fill defaults, refuse unknown or ill-typed options, then apply game-specific checks."""
        specs = {spec.name: spec for spec in self.options}
        unknown = sorted(set(given) - set(specs))
        if unknown:
            return Rejection("unknown_option", f"unknown option(s): {', '.join(unknown)}")
        if not self.min_players <= seats <= self.max_players:
            return Rejection(
                "bad_seat_count",
                f"{self.title} takes {self.min_players}-{self.max_players} players, not {seats}",
            )
        resolved: dict[str, Any] = {}
        for name, spec in specs.items():
            value = given.get(name, spec.default)
            problem = _option_problem(spec, value)
            if problem:
                return Rejection("bad_option", f"option {name!r}: {problem}")
            resolved[name] = value
        for name in given:
            problem = _requirement_problem(specs, specs[name], given[name], resolved)
            if problem:
                return Rejection("bad_option", problem)
        problem = _players_problem(specs, self.players_requirements, seats, resolved)
        if problem:
            return Rejection("bad_seat_count", problem)
        if self.validate_options is not None:
            return self.validate_options(resolved, seats)
        return resolved


def evolve_in_place(
    start: Callable[[Any], Any], evolvers: dict[type, Callable[[Any, Any], None]]
) -> Callable[[Any, Any], Any]:
    """The ``evolve`` of a game whose first event creates the state (``start``) and whose
    every later event is applied in place by the function registered for its type."""

    def evolve(state: Any, event: Any) -> Any:
        if state is None:
            return start(event)
        evolvers[type(event)](state, event)
        return state

    return evolve


def decide_in_turn(
    deciders: dict[type, Callable[[Any, int, Any], Any]], title: str
) -> Callable[[Any, int, Any], Any]:
    """The ``decide`` of a game played one seat at a time, whose state says who moves
    (``seat_to_move``) and whether it is over (``end_reason``): the turn is checked, then the
    function registered for the action's type decides."""

    def decide(state: Any, seat: int, action: Any) -> list[Any] | Rejection:
        if state.end_reason is not None:
            return Rejection("game_over", "the game is over")
        if seat != state.seat_to_move:
            return Rejection("not_your_turn", f"it is seat {state.seat_to_move}'s turn")
        decider = deciders.get(type(action))
        if decider is None:
            return Rejection("unknown_action", f"{type(action).__name__} is not a {title} action")
        return decider(state, seat, action)

    return decide


def _requirement_problem(
    specs: Mapping[str, OptionSpec], spec: OptionSpec, value: Any, resolved: dict[str, Any]
) -> str | None:
    """Why ``spec`` may not have ``value`` beside the ``resolved`` options: an option left at
    its default needs nothing, one set needs every option it ``requires`` at its value."""
    if value == spec.default:
        return None
    missing = {name: wanted for name, wanted in spec.requires.items() if resolved[name] != wanted}
    if not missing:
        return None
    needs = _settings_text(specs, missing)
    return f"option {spec.name!r} ({spec.title}) needs {needs}: set that too, or leave it out"


def _players_problem(
    specs: Mapping[str, OptionSpec],
    requirements: Sequence[PlayersRequirement],
    seats: int,
    resolved: dict[str, Any],
) -> str | None:
    """Why ``seats`` players may not play with the ``resolved`` options: a requirement for
    that many players none of whose settings the options all have."""
    for requirement in requirements:
        if requirement.players != seats or any(
            all(resolved[name] == wanted for name, wanted in settings.items())
            for settings in requirement.requires_any
        ):
            continue
        needs = " or ".join(
            _settings_text(specs, settings) for settings in requirement.requires_any
        )
        return f"{seats} players need {needs}: set one, or seat fewer players"
    return None


def _settings_text(specs: Mapping[str, OptionSpec], settings: Mapping[str, Any]) -> str:
    """Options at values, as a refusal names them: their names, titles and JSON values."""
    return " and ".join(
        f"option {name!r} ({specs[name].title}) set to {msgspec.json.encode(wanted).decode()}"
        for name, wanted in settings.items()
    )


def _option_problem(spec: OptionSpec, value: Any) -> str | None:
    """Types are checked exactly (``type(x) is int``): JSON's 5.0 equals 5 and true equals 1,
    but the engines would fail on them at set-up, long after the table was accepted."""
    if value is None and spec.default is None:
        return None
    if spec.type == "bool":
        return None if type(value) is bool else "must be true or false"
    if spec.type == "int":
        if type(value) is not int:
            return "must be an integer"
        if spec.minimum is not None and value < spec.minimum:
            return f"must be at least {spec.minimum}"
        if spec.maximum is not None and value > spec.maximum:
            return f"must be at most {spec.maximum}"
        return None
    if spec.type == "enum":
        choices = spec.choices or []
        ok = any(type(value) is type(choice) and value == choice for choice in choices)
        return None if ok else f"must be one of {choices}"
    if spec.type == "list[int]":
        ok = type(value) is list and all(type(v) is int for v in value)
        return None if ok else "must be a list of integers"
    if spec.type == "list[str]":
        ok = type(value) is list and all(type(v) is str for v in value)
        return None if ok else "must be a list of strings"
    return f"unsupported option type {spec.type}"
