"""The public OpenAPI contract (lobby, match, webhooks), generated from the code, in openapi/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from shared.http import COMPONENT_REF, add_components, component_ref, finalize_contract
from shared.settings import Settings

if TYPE_CHECKING:
    from services.rules.games.contract import Game


def build_contract() -> dict[str, Any]:
    """Merge the public services' schemas into one OpenAPI 3.1 document."""
    from services.lobby.app import create_app as create_lobby
    from services.match.app import create_app as create_match
    from services.match.schemas import MatchFinished
    from services.rules.games import load_games
    from services.webhooks.app import create_app as create_webhooks

    settings = Settings(instance_id="contract")
    merged: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "playtable API",
            "version": "0.1.0",
            "description": (
                "Host turn-based tabletop games: create tables in the lobby, seat players, "
                "start matches, submit moves and read each match as your seat may see it; "
                "subscribe URLs to signed webhooks (Standard Webhooks) of the events. "
                "Errors are RFC 9457 problem+json documents with a stable `type` per error."
            ),
        },
        "servers": [
            {
                "url": f"http://127.0.0.1:{settings.gateway_port}",
                "description": "the gateway of `playtable stack`: lobby and match",
            }
        ],
        "paths": {},
        "components": {"schemas": {}},
        "tags": [],
    }
    for app in (create_lobby(settings), create_match(settings), create_webhooks(settings)):
        schema = app.openapi_schema.to_schema()
        for path, item in schema.get("paths", {}).items():
            if path == "/health":
                continue  # each service has its own; not part of the public contract
            merged["paths"][path] = item
        components = schema.get("components", {})
        merged["components"]["schemas"].update(components.get("schemas", {}))
        merged["components"]["securitySchemes"] = components.get("securitySchemes", {})
        for tag in schema.get("tags", []):
            if tag not in merged["tags"]:
                merged["tags"].append(tag)
    operators = {
        "url": f"http://127.0.0.1:{settings.webhooks_port}",
        "description": "webhooks administration: operators only, never on the gateway",
    }
    for path, item in merged["paths"].items():
        if path.startswith("/webhooks"):
            item["servers"] = [operators]
    if not merged["tags"]:
        del merged["tags"]
    add_components(merged, [MatchFinished])
    add_game_components(merged["components"]["schemas"], load_games())
    return finalize_contract(merged)


GAME_DATA = {
    "GameAction": ("Action", "action_type"),
    "GameEvent": ("Event", "redacted_event_type"),
    "GameView": ("View", "view_type"),
    "GameState": ("State", "state_type"),
}
"""The components the match API refers to (see ``services/match/schemas.py``), each a union
over the games of one per game, named after the game (``HanabiAction``), from its Structs."""


def game_prefix(game: Game) -> str:
    """What every component of a game's data is named with: ``breaking_news`` -> ``BreakingNews``
    (tags such as ``PlayCard`` repeat across games; component names must not)."""
    return "".join(part.capitalize() for part in game.name.split("_"))


def game_component_name(game: Game, name: str) -> str:
    prefix = game_prefix(game)
    return name if name.startswith(prefix) else prefix + name


def add_game_components(components: dict[str, Any], games: dict[str, Game]) -> None:
    """Every game's actions, events as shown, view and full state as named schemas
    (discriminated unions on ``type``), the unions over all games, and ``Outcome``."""
    from services.rules.games.contract import Outcome

    _, outcome = msgspec.json.schema_components([Outcome], ref_template=COMPONENT_REF)
    _add_unique(components, outcome)
    per_kind: dict[str, list[tuple[str | None, str]]] = {union: [] for union in GAME_DATA}
    for game in games.values():
        types = [getattr(game, attribute) for _, attribute in GAME_DATA.values()]
        roots, named = msgspec.json.schema_components(types, ref_template=COMPONENT_REF)
        refs = {
            component_ref(name): component_ref(game_component_name(game, name)) for name in named
        }
        for name, schema in named.items():
            renamed = game_component_name(game, name)
            # generated clients name their models after titles, which must differ too
            _add_unique(components, {renamed: {**_pointed(schema, refs), "title": renamed}})
        for (union, (kind, attribute)), root in zip(GAME_DATA.items(), roots, strict=True):
            root = _pointed(root, refs)
            name = game_prefix(game) + kind
            if root.get("$ref") != component_ref(name):
                _add_unique(components, {name: root})
            per_kind[union].append((_tag(getattr(game, attribute)), component_ref(name)))
    for union, tagged_refs in per_kind.items():
        _add_unique(components, {union: _union_over_games(tagged_refs)})


def _union_over_games(tagged_refs: list[tuple[str | None, str]]) -> dict[str, Any]:
    """One game's data or another's: discriminated where each game's is one tagged Struct
    (views, states), else any of them (tags repeat across games: the match's game tells)."""
    refs = [{"$ref": ref} for _, ref in tagged_refs]
    mapping = {tag: ref for tag, ref in tagged_refs if tag is not None}
    if len(mapping) < len(tagged_refs):
        return {"anyOf": refs}
    return {"oneOf": refs, "discriminator": {"propertyName": "type", "mapping": mapping}}


def _tag(type_: Any) -> str | None:
    """The ``type`` tag of a tagged Struct; None for a union."""
    info = msgspec.inspect.type_info(type_)
    return info.tag if isinstance(info, msgspec.inspect.StructType) else None


def _pointed(schema: Any, refs: dict[str, str]) -> Any:
    """``schema`` with its references renamed by ``refs``, each tagged union (msgspec's
    ``anyOf`` with a discriminator) a ``oneOf`` (its tags exclude each other), and no boolean
    schema where generated clients fail on one."""
    if isinstance(schema, list):
        return [_pointed(item, refs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    pointed: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            pointed[key] = refs.get(value, value)
        elif key == "discriminator":
            mapping = {tag: refs.get(ref, ref) for tag, ref in value.get("mapping", {}).items()}
            pointed[key] = {**value, "mapping": mapping} if mapping else value
        else:
            pointed[key] = _pointed(value, refs)
    if "discriminator" in pointed and "anyOf" in pointed:
        pointed["oneOf"] = pointed.pop("anyOf")
    if pointed.get("items") is False and pointed.get("maxItems") == len(pointed["prefixItems"]):
        del pointed["items"]  # a fixed-size tuple: redundant, and clients choke on ``false``
    return pointed


def _add_unique(components: dict[str, Any], added: dict[str, Any]) -> None:
    """Generated names must never silently replace another schema."""
    for name, schema in added.items():
        if name in components and components[name] != schema:
            raise ValueError(f"two schemas are both named {name!r}")
        components[name] = schema


def render(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, sort_keys=True) + "\n"


MATCH_FILE_SCHEMA = "playtable-match.schema.json"
"""Beside the contract: the JSON Schema of the playtable match file (``shared/match_file.py``)."""


def generated_files(contract_path: Path) -> dict[Path, str]:
    """Every committed file generated from the code, by path: the contract and the schema."""
    from shared.match_file import json_schema

    return {
        contract_path: render(build_contract()),
        contract_path.parent / MATCH_FILE_SCHEMA: render(json_schema()),
    }


def write_contract(path: Path, *, check: bool = False) -> int:
    files = generated_files(path)
    if check:
        stale = [
            file for file, text in files.items() if not file.exists() or file.read_text() != text
        ]
        for file in stale:
            print(f"{file} is stale: run `playtable openapi`", file=sys.stderr)
        return 1 if stale else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    for file, text in files.items():
        file.write_text(text)
        print(f"wrote {file}")
    return 0
