"""The contract built from the code: the three public apps' schemas merged into one document,
then completed by the other modules of this package; and the files ``playtable openapi``
writes (or checks) in openapi/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from shared.domain.hosting import TIME_CONTROL_SHAPES, BotInfo, ClockView, Hosting
from shared.domain.messages import TableEvent
from shared.edge.contract import COMPONENT_REF, CONTRACT_VERSION, add_components, finalize_contract
from shared.infra.settings import Settings
from tools.contract.games import add_game_components
from tools.contract.operations import add_links, add_problem_headers, document_feeds, problem_types
from tools.contract.schemas import add_union, add_unique, operations_by_id, pointed_schema
from tools.contract.webhooks import document_webhooks, webhook_event_type

if TYPE_CHECKING:
    from litestar import Litestar


def build_contract() -> dict[str, Any]:
    """Merge the public services' schemas into one OpenAPI 3.1 document."""
    from services.lobby.app import create_app as create_lobby
    from services.lobby.schemas import TableFeedEvent
    from services.match.app import create_app as create_match
    from services.match.schemas import MatchFinished
    from services.rules.engine import RulesEngine
    from services.rules.games.registry import GAMES
    from services.webhooks.app import create_app as create_webhooks
    from services.webhooks.bodies import WebhookBody
    from services.webhooks.schemas import WebhookPing
    from tools.contract.examples import add_examples

    settings = Settings(instance_id="contract")
    merged: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "playtable API",
            "version": CONTRACT_VERSION,
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
                "description": "the gateway of `playtable stack`: lobby, match and webhooks",
            }
        ],
        "paths": {},
        "components": {"schemas": {}},
        "tags": [],
    }
    operator_server = {
        "url": f"http://127.0.0.1:{settings.lobby_port}",
        "description": "the lobby's own port: the operator's endpoints, which no gateway routes",
    }
    apps = (create_lobby(settings), create_match(settings), create_webhooks(settings))
    for app in apps:
        schema = app.openapi_schema.to_schema()
        for path, item in schema.get("paths", {}).items():
            if path in {"/health", "/ready"}:
                continue  # each service has its own; not part of the public contract
            if path == "/apps" or path.startswith("/apps/"):
                item = {**item, "servers": [operator_server]}
            merged["paths"][path] = item
        components = schema.get("components", {})
        merged["components"]["schemas"].update(components.get("schemas", {}))
        merged["components"]["securitySchemes"] = components.get("securitySchemes", {})
        for tag in schema.get("tags", []):
            if tag not in merged["tags"]:
                merged["tags"].append(tag)
    if not merged["tags"]:
        del merged["tags"]
    for app in apps:
        _exact_request_bodies(merged, app)
    add_links(merged)
    # msgspec's schemas of the Structs both the API's bodies and the events hold, whose defaults
    # Litestar renders otherwise
    shared_structs = [Hosting, ClockView, BotInfo]
    add_components(
        merged, [MatchFinished, TableFeedEvent, WebhookBody, WebhookPing, *shared_structs]
    )
    add_union(merged["components"]["schemas"], "TableEvent", TableEvent)
    games = GAMES
    add_game_components(merged["components"]["schemas"], games)
    document_feeds(merged, games)
    samples = RulesEngine(games).event_samples
    add_unique(merged["components"]["schemas"], {"WebhookEventType": webhook_event_type(samples)})
    merged["webhooks"] = document_webhooks(merged["components"]["schemas"], games, samples)
    merged["x-problem-types"] = problem_types(games)
    add_problem_headers(merged)
    merged["components"]["schemas"]["TimeControl"]["oneOf"] = TIME_CONTROL_SHAPES
    finalize_contract(merged)
    add_examples(merged)  # after finalize_contract, which sets every error's content
    return merged


def _exact_request_bodies(contract: dict[str, Any], app: Litestar) -> None:
    """Each request body's schema as msgspec, which checks it (``check_request``), writes it:
    Litestar's drops a bound of 0 on an optional number and ``additionalProperties: false``,
    so what it documents would admit requests that get a 400."""
    operations = operations_by_id(contract)
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            body = handler.parsed_fn_signature.parameters.get("data")
            if body is None or handler.operation_id not in operations:
                continue
            _, named = msgspec.json.schema_components([body.annotation], ref_template=COMPONENT_REF)
            for named_as, schema in named.items():  # the body, and the Structs it holds
                contract["components"]["schemas"][named_as] = pointed_schema(schema, {})


def render(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, sort_keys=True) + "\n"


MATCH_FILE_SCHEMA = "playtable-match.schema.json"
"""Beside the contract: the JSON Schema of the playtable match file
(``shared/domain/match_file.py``)."""


CARCASSONNE_TURNS_SCHEMA = "carcassonne-turns.schema.json"
"""Beside it: the JSON Schema of the Carcassonne turn list (``carcassonne/turns.py``)."""


def generated_files(contract_path: Path) -> dict[Path, str]:
    """Every committed file generated from the code, by path: the contract and the schemas
    of the file formats."""
    from services.rules.games.carcassonne import turns as carcassonne_turns
    from shared.domain import match_file

    return {
        contract_path: render(build_contract()),
        contract_path.parent / MATCH_FILE_SCHEMA: render(match_file.json_schema()),
        contract_path.parent / CARCASSONNE_TURNS_SCHEMA: render(carcassonne_turns.json_schema()),
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
