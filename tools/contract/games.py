"""Each game's data in the contract: its actions, events, view and state as named schemas, and
the match API's bodies split into one schema per game (``PER_GAME``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import msgspec

from shared.domain.hosting import HOSTING_EVENT_TYPES, HostingEvent
from shared.edge.contract import COMPONENT_REF, component_ref
from tools.contract.schemas import add_unique, pointed_schema

if TYPE_CHECKING:
    from services.rules.games.contract import Game


GAME_DATA = {
    "GameAction": ("Action", "action_type"),
    "GameEvent": ("Event", "redacted_event_type"),
    "GameView": ("View", "view_type"),
    "GameState": ("State", "state_type"),
}
"""The placeholders the match API's bodies name game data by (``services/match/schemas.py``),
each replaced, in the copy of a body for one game, by that game's own union (``HanabiAction``)
of its Structs."""


def game_prefix(game: Game) -> str:
    """What every component of a game's data is named with: ``breaking_news`` -> ``BreakingNews``
    (tags such as ``PlayCard`` repeat across games; component names must not)."""
    return "".join(part.capitalize() for part in game.name.split("_"))


def _game_component(game: Game, name: str) -> str:
    """A game's component's name; the seats' events every game shares keep theirs."""
    return name if name in HOSTING_EVENT_TYPES else game_component_name(game, name)


def game_component_name(game: Game, name: str) -> str:
    prefix = game_prefix(game)
    return name if name.startswith(prefix) else prefix + name


def add_game_components(components: dict[str, Any], games: dict[str, Game]) -> None:
    """Every game's actions, events as shown, view and full state as named schemas
    (discriminated unions on ``type``), each body holding them split by game, and ``Outcome``."""
    from services.rules.games.contract import Outcome

    _, outcome = msgspec.json.schema_components([Outcome], ref_template=COMPONENT_REF)
    outcome["Outcome"]["properties"]["forfeited"] = {
        "type": "array",
        "items": {"type": "integer"},
        "description": "The seats that ran out of time or left, when the match ended early"
        " (`reason`: `forfeit` or `abandoned`; `scores` are then 0)",
    }
    add_unique(components, outcome)
    for game in games.values():
        types = [getattr(game, attribute) for _, attribute in GAME_DATA.values()]
        # a match's log holds its seats' events beside the game's (``shared.domain.hosting``)
        events = list(GAME_DATA).index("GameEvent")
        types[events] = Union[types[events], HostingEvent]  # noqa: UP007
        roots, named = msgspec.json.schema_components(types, ref_template=COMPONENT_REF)
        refs = {component_ref(name): component_ref(_game_component(game, name)) for name in named}
        for name, schema in named.items():
            renamed = _game_component(game, name)
            # generated clients name their models after titles, which must differ too
            add_unique(components, {renamed: {**pointed_schema(schema, refs), "title": renamed}})
        for (kind, _), root in zip(GAME_DATA.values(), roots, strict=True):
            root = pointed_schema(root, refs)
            name = game_prefix(game) + kind
            if root.get("$ref") != component_ref(name):
                add_unique(components, {name: root})
    for container in PER_GAME:
        _split_by_game(components, container, games)
    placeholders = {component_ref(union) for union in GAME_DATA}
    unsplit = [name for name, schema in components.items() if _refs(schema) & placeholders]
    if unsplit:
        raise ValueError(f"game data in bodies not split by game (add them to PER_GAME): {unsplit}")


PER_GAME = (
    "SubmitAction",
    "LegalActions",
    "ActionAccepted",
    "MatchEvent",
    "MatchInfo",
    "MatchReplay",
)
"""The bodies holding one game's data (a move, actions, events, a view, a state): one schema per
game, told apart by their ``game`` field, each naming only that game's data. ``type`` tags repeat
across games (Hanabi's and Dingo's ``PlayCard``), so a union over every game's data would let a
generated client read one game's data as another's, and any game's move pass for any match's."""


def _split_by_game(components: dict[str, Any], name: str, games: dict[str, Game]) -> None:
    """``name`` becomes a union, discriminated on ``game``, of one copy per game in which
    ``game`` is that game's name and every game-data placeholder is that game's own union."""
    shared = components[name]
    variants = {}
    for game in games.values():
        refs = {
            component_ref(union): component_ref(game_prefix(game) + kind)
            for union, (kind, _) in GAME_DATA.items()
        }
        variant = pointed_schema(shared, refs)
        variant["properties"]["game"] = {"type": "string", "const": game.name}
        variant["title"] = game_prefix(game) + name
        add_unique(components, {variant["title"]: variant})
        variants[game.name] = component_ref(variant["title"])
    components[name] = {
        "oneOf": [{"$ref": ref} for ref in variants.values()],
        "discriminator": {"propertyName": "game", "mapping": variants},
    }


def _refs(schema: Any) -> set[str]:
    """Every ``$ref`` in ``schema``."""
    if isinstance(schema, list):
        return set().union(*(_refs(item) for item in schema))
    if not isinstance(schema, dict):
        return set()
    found = {schema["$ref"]} if isinstance(schema.get("$ref"), str) else set()
    return found.union(*(_refs(value) for value in schema.values()))
