"""The public OpenAPI contract (lobby, match, webhooks), generated from the code, in openapi/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

import msgspec

from shared.domain.hosting import (
    HOSTING_EVENT_TYPES,
    TIME_CONTROL_SHAPES,
    BotInfo,
    ClockView,
    Hosting,
    HostingEvent,
)
from shared.domain.messages import MATCH_FINISHED, TABLE_EVENT_TYPES, FinishedMatch, TableEvent
from shared.domain.rules_api import GameSamples
from shared.edge.contract import (
    COMPONENT_REF,
    CONTRACT_VERSION,
    add_components,
    component_ref,
    finalize_contract,
)
from shared.edge.errors import PROBLEM_TYPE_BASE
from shared.infra.settings import Settings

if TYPE_CHECKING:
    from litestar import Litestar

    from services.rules.games.contract import Game
    from services.webhooks.schemas import EventTypeInfo


def build_contract() -> dict[str, Any]:
    """Merge the public services' schemas into one OpenAPI 3.1 document."""
    from services.lobby.app import create_app as create_lobby
    from services.lobby.schemas import TableFeedEvent
    from services.match.app import create_app as create_match
    from services.match.schemas import MatchFinished
    from services.rules.engine import RulesEngine
    from services.rules.games.registry import GAMES
    from services.webhooks.app import create_app as create_webhooks
    from services.webhooks.dispatcher import WebhookBody
    from services.webhooks.schemas import WebhookPing
    from tools.contract_examples import add_examples

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
    _add_union(merged["components"]["schemas"], "TableEvent", TableEvent)
    games = GAMES
    add_game_components(merged["components"]["schemas"], games)
    _document_feeds(merged, games)
    samples = RulesEngine(games).event_samples
    _add_unique(merged["components"]["schemas"], {"WebhookEventType": webhook_event_type(samples)})
    merged["webhooks"] = document_webhooks(merged["components"]["schemas"], games, samples)
    merged["x-problem-types"] = problem_types(games)
    add_problem_headers(merged)
    merged["components"]["schemas"]["TimeControl"]["oneOf"] = TIME_CONTROL_SHAPES
    finalize_contract(merged)
    add_examples(merged)  # after finalize_contract, which sets every error's content
    return merged


def _operations(contract: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every operation of the contract by its id."""
    return {
        operation["operationId"]: operation
        for item in contract["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    }


def _exact_request_bodies(contract: dict[str, Any], app: Litestar) -> None:
    """Each request body's schema as msgspec, which checks it (``check_request``), writes it:
    Litestar's drops a bound of 0 on an optional number and ``additionalProperties: false``,
    so what it documents would admit requests that get a 400."""
    operations = _operations(contract)
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            body = handler.parsed_fn_signature.parameters.get("data")
            if body is None or handler.operation_id not in operations:
                continue
            _, named = msgspec.json.schema_components([body.annotation], ref_template=COMPONENT_REF)
            for named_as, schema in named.items():  # the body, and the Structs it holds
                contract["components"]["schemas"][named_as] = _pointed(schema, {})


def _link(target: str, description: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": target, "description": description, "parameters": parameters}


TABLE_ID = "$response.body#/table_id"
MATCH_ID = "$response.body#/match_id"
SAME_MATCH = "$request.path.match_id"
SUBSCRIPTION_ID = "$response.body#/subscription/id"
LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("createTable", "201"): {
        "JoinTable": {
            **_link(
                "joinTable",
                "Take a seat at the new table (a private one: with its invitation)",
                table_id=TABLE_ID,
            ),
            "x-authorization": "Bearer {$response.body#/invitation_token}",
        },
        "GetTable": _link("getTable", "Look at the new table", table_id=TABLE_ID),
        "FollowTable": _link("followTable", "Follow the table's events", table_id=TABLE_ID),
    },
    ("joinTable", "201"): {
        "JoinTable": _link(
            "joinTable", "Seat another player", table_id="$response.body#/table/table_id"
        ),
        "StartTable": {
            **_link(
                "startTable",
                "Start the table with the seat's token, once every seat is taken",
                table_id="$response.body#/table/table_id",
            ),
            "x-authorization": "Bearer {$response.body#/token}",
        },
        "LeaveTable": {
            **_link(
                "leaveTable",
                "Leave the seat again, with its token",
                table_id="$response.body#/table/table_id",
                seat="$response.body#/seat",
            ),
            "x-authorization": "Bearer {$response.body#/token}",
        },
    },
    ("startTable", "201"): {
        "GetMatch": _link("getMatch", "The match the table started", match_id=MATCH_ID),
        "ListLegalActions": _link(
            "listLegalActions", "What a seat may do now (with its token)", match_id=MATCH_ID
        ),
        "FollowMatch": _link("followMatch", "Follow the match live", match_id=MATCH_ID),
    },
    ("startTable", "202"): {
        "GetMatch": _link("getMatch", "Look until it is no longer `creating`", match_id=MATCH_ID),
    },
    ("getMatch", "200"): {
        "ListLegalActions": _link(
            "listLegalActions", "What a seat may do now (with its token)", match_id=MATCH_ID
        ),
        "ListMatchEvents": _link("listMatchEvents", "The match's events", match_id=MATCH_ID),
        "ReplayMatch": {
            **_link(
                "replayMatch",
                "The match at this version",
                match_id=MATCH_ID,
                version="$response.body#/version",
            ),
        },
        "ExportMatch": _link(
            "exportMatch", "The match as a file, once it ended", match_id=MATCH_ID
        ),
    },
    ("listLegalActions", "200"): {
        "SubmitAction": {
            **_link("submitAction", "Make the first legal move", match_id=SAME_MATCH),
            "requestBody": {
                "game": "$response.body#/game",
                "expected_version": "$response.body#/version",
                "action": "$response.body#/actions/0",
            },
        },
    },
    ("submitAction", "201"): {
        "GetMatch": _link("getMatch", "The match after the move", match_id=SAME_MATCH),
        "ListLegalActions": _link("listLegalActions", "The next moves", match_id=SAME_MATCH),
    },
    ("importMatch", "201"): {
        "GetMatch": _link("getMatch", "The imported match", match_id=MATCH_ID),
        "ListMatchEvents": _link("listMatchEvents", "Its events", match_id=MATCH_ID),
    },
    ("createWebhookSubscription", "201"): {
        name: _link(target, description, subscription_id=SUBSCRIPTION_ID)
        for name, target, description in [
            ("GetSubscription", "getWebhookSubscription", "The new subscription"),
            ("UpdateSubscription", "updateWebhookSubscription", "Change it"),
            ("ListDeliveries", "listWebhookDeliveries", "What was sent to it"),
            ("RotateSecret", "rotateWebhookSecret", "Replace its signing secret"),
            ("DeleteSubscription", "deleteWebhookSubscription", "Stop it"),
        ]
    },
}
"""How a client goes on from an answer (OpenAPI links): create -> join -> start -> match ->
actions -> move, which stateful testing follows. Seat tokens are not parameters (they are the
security scheme), so a link that needs one names it in ``x-authorization``."""


PROBLEM_HEADERS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("submitAction", "409"): {
        "ETag": {
            "description": "With `stale-version`: the ETag the mover's `getMatch` now carries"
            " (the current version, as its seat sees it)",
            "schema": {"type": "string"},
        }
    },
}
"""Headers an operation's problem answers send beside the problem (``services/match``)."""


def add_problem_headers(contract: dict[str, Any]) -> None:
    operations = _operations(contract)
    for (operation_id, status), headers in PROBLEM_HEADERS.items():
        operations[operation_id]["responses"][status].setdefault("headers", {}).update(headers)


def add_links(contract: dict[str, Any]) -> None:
    operations = _operations(contract)
    for (source, status), links in LINKS.items():
        for link in links.values():
            if link["operationId"] not in operations:
                raise ValueError(f"a link from {source} names no operation: {link}")
        operations[source]["responses"][status]["links"] = links


def _add_union(components: dict[str, Any], name: str, union: Any) -> None:
    """A tagged union of Structs as one named schema (msgspec names only its members)."""
    (root,), named = msgspec.json.schema_components([union], ref_template=COMPONENT_REF)
    for member, schema in named.items():
        _add_unique(components, {member: schema})
    _add_unique(components, {name: _pointed(root, {})})


def _document_feeds(contract: dict[str, Any], games: dict[str, Game]) -> None:
    """What each live feed sends: the SSE ``event`` names, each with its ``data`` schema
    (``x-sse-events``), since OpenAPI 3.1 cannot describe the items of a stream."""
    from services.rules.engine import event_types
    from services.rules.games.contract import struct_tags

    # the SSE ``event`` is the stored event's type (its ``data`` the redacted event)
    match_events = sorted({name for game in games.values() for name in event_types(game)})
    feeds = {
        "followMatch": (
            {name: "MatchEvent" for name in match_events} | {"MatchFinished": "MatchFinished"},
            "`id:` the event's version, `event:` its type, `data:` a `MatchEvent` (the game's"
            " event in its `data`); after a finished match's last event, `event: MatchFinished`"
            " with a `MatchFinished`, and the stream ends.",
        ),
        "followTable": (
            {name: "TableFeedEvent" for name in struct_tags(TableEvent)},
            "`id:` the event's version, `event:` its type, `data:` a `TableFeedEvent`.",
        ),
    }
    operations = _operations(contract)
    for operation_id, (events, description) in feeds.items():
        response = operations[operation_id]["responses"]["200"]
        response["content"]["text/event-stream"]["schema"] = {
            "type": "object",
            "description": f"One Server-Sent Event: {description}",
            "required": ["data"],
            "properties": {
                "id": {"type": "string", "pattern": "^[0-9]+$"},
                "event": {"type": "string", "enum": sorted(events)},
                "data": {"type": "string", "contentMediaType": "application/json"},
                "retry": {"type": "integer"},
            },
        }
        response["x-sse-events"] = {
            name: {"$ref": component_ref(ref)} for name, ref in events.items()
        }


def webhook_event_type(samples: list[GameSamples]) -> dict[str, Any]:
    """Every event type a webhook subscription may name (the API refuses any other)."""
    from services.webhooks.samples import event_types

    return {
        "type": "string",
        "enum": [info.type for info in event_types(samples)],
        "description": "A table's event, a game's event (as `event_types` in the catalogue"
        " names them) or `MatchFinished`",
    }


WEBHOOK_HEADERS = {
    "webhook-id": (
        "The webhook's id, the same on every attempt (`<stream_id>:<version>:<type>`; a ping's"
        " `ping:<uuid>`): de-duplicate by it",
        {"type": "string"},
    ),
    "webhook-timestamp": (
        "When this attempt was signed, in Unix seconds: refuse one far from your clock (a replay)",
        {"type": "string", "pattern": "^[0-9]+$"},
    ),
    "webhook-signature": (
        "Space-separated `v1,<base64>` signatures: HMAC-SHA256 of `<webhook-id>.<webhook-"
        "timestamp>.<body>` under each signing secret (the `whsec_` prefix removed, the rest"
        " base64-decoded; during a rotation both secrets sign): accept if one matches",
        {"type": "string"},
    ),
}
"""The Standard Webhooks headers every webhook carries (``services/webhooks/signing.py``)."""

WEBHOOK_RESPONSES = {
    "2XX": "Accepted: the delivery is done",
    "408": "Retried later (as are 425, 429 and 5XX), after the `Retry-After` asked for if any",
    "410": "Gone: the subscription is disabled, and gets nothing more until it is enabled again",
    "425": "Retried later",
    "429": "Retried later, after the `Retry-After` asked for if any",
    "5XX": "Retried later, with exponential backoff (so are timeouts and network errors)",
    "default": "Failed for good: not retried (the delivery log shows it; redeliver it then)",
}
"""What a receiver's answer does (``services/webhooks/delivery.py``)."""


def document_webhooks(
    components: dict[str, Any], games: dict[str, Game], samples: list[GameSamples]
) -> dict[str, Any]:
    """The contract's ``webhooks``: what a subscriber's URL receives, one entry per event type
    (and the test ping), each a signed POST of a ``WebhookBody`` whose ``data`` is that event
    as a spectator sees it, with a sample as its example. A game's event type that several games
    record (``CardPlayed``) is one body per game, told apart by ``game``."""
    from services.webhooks import samples as webhook_samples

    no_game: dict[str, Any] = {"type": "null"}
    any_game: dict[str, Any] = {"type": "string", "enum": list(games)}
    data_refs: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
        name: {"": (no_game, name)} for name in TABLE_EVENT_TYPES
    }
    data_refs |= {name: {"": (any_game, name)} for name in HOSTING_EVENT_TYPES}
    data_refs[MATCH_FINISHED] = {"": (any_game, "FinishedMatch")}
    data_refs[webhook_samples.PING] = {"": (no_game, "WebhookPing")}
    for game_samples in samples:
        game = games[game_samples.game]
        shown = components[game_prefix(game) + "Event"]["discriminator"]["mapping"]
        for event in game_samples.events:  # the tag of its spectator's redaction
            tag = msgspec.json.decode(event.data)["type"]
            game_const = {"type": "string", "const": game.name}
            ref = shown[tag].rpartition("/")[2]
            data_refs.setdefault(event.type, {})[game.name] = (game_const, ref)
    _add_unique(components, {"FinishedMatch": _finished_match()})
    infos = [*webhook_samples.event_types(samples), webhook_samples.ping_info()]
    return {
        info.type: {"post": _webhook(components, games, info, data_refs[info.type])}
        for info in sorted(infos, key=lambda info: info.type)
    }


def _webhook(
    components: dict[str, Any],
    games: dict[str, Game],
    info: EventTypeInfo,
    data_refs: dict[str, tuple[dict[str, Any], str]],
) -> dict[str, Any]:
    """``data_refs``: the schema of ``game`` and the component of ``data``, by game (one entry
    keyed "" where no game or any game records it)."""
    body = components["WebhookBody"]
    bodies = {
        game: _webhook_body(body, info, game_schema, ref)
        for game, (game_schema, ref) in data_refs.items()
    }
    if len(bodies) == 1:
        (schema,) = bodies.values()
    else:
        mapping = {}
        for game, variant in bodies.items():
            name = f"{game_prefix(games[game])}{info.type}Webhook"
            _add_unique(components, {name: {**variant, "title": name}})
            mapping[game] = component_ref(name)
        schema = {
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "game", "mapping": mapping},
        }
    games = f" Recorded by {', '.join(info.games)} matches." if info.games else ""
    return {
        "summary": f"`{info.type}`: {info.description}" if info.description else f"`{info.type}`",
        "description": f"{body['description']}{games}",
        "parameters": [
            {"name": name, "in": "header", "required": True, "description": text, "schema": kind}
            for name, (text, kind) in WEBHOOK_HEADERS.items()
        ],
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": schema,
                    "example": msgspec.json.decode(info.sample),
                }
            },
        },
        "responses": {
            status: {"description": description}
            for status, description in WEBHOOK_RESPONSES.items()
        },
    }


def _webhook_body(
    body: dict[str, Any], info: EventTypeInfo, game: dict[str, Any], data_ref: str
) -> dict[str, Any]:
    """``WebhookBody`` of one event type: its ``type``, ``game`` and ``data`` narrowed."""
    schema = {key: value for key, value in body.items() if key not in ("title", "description")}
    schema["properties"] = {
        **body["properties"],
        "type": {"type": "string", "const": info.type},
        "game": game,
        "data": {"$ref": component_ref(data_ref)},
    }
    return schema


def _finished_match() -> dict[str, Any]:
    """``FinishedMatch`` with its ``result`` an ``Outcome`` (``shared.domain.messages`` knows no
    contract components)."""
    _, named = msgspec.json.schema_components([FinishedMatch], ref_template=COMPONENT_REF)
    schema = named["FinishedMatch"]
    schema["properties"]["result"] = {"$ref": component_ref("Outcome")}
    return schema


def problem_types(games: dict[str, Game]) -> list[dict[str, Any]]:
    """Every problem ``type`` URI the API answers with, its status, title and meaning: the
    services' own, then each refusal of the games' rules (which game answers it, and when)."""
    from services.rules.games.contract import COMMON_REFUSALS
    from shared.edge.problems import PROBLEM_TYPES, RULES_REFUSAL

    listed = [
        {"type": PROBLEM_TYPE_BASE + problem.code, **msgspec.to_builtins(problem)}
        for problem in PROBLEM_TYPES.values()
    ]
    by_code: dict[str, dict[str, str]] = {}
    for game in games.values():
        for code, description in {**COMMON_REFUSALS, **game.refusals}.items():
            by_code.setdefault(code.replace("_", "-"), {})[game.title] = description
    for code, descriptions in sorted(by_code.items()):
        if code in PROBLEM_TYPES:
            continue
        meanings = set(descriptions.values())
        description = (
            meanings.pop()
            if len(meanings) == 1
            else " ".join(f"{title}: {text}" for title, text in descriptions.items())
        )
        listed.append(
            {
                "type": PROBLEM_TYPE_BASE + code,
                "code": code,
                "status": 422,
                "title": RULES_REFUSAL,
                "description": description,
                "state": True,  # a move's legality is the match's to say
                "games": sorted(descriptions),
            }
        )
    return listed


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
    _add_unique(components, outcome)
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
            _add_unique(components, {renamed: {**_pointed(schema, refs), "title": renamed}})
        for (kind, _), root in zip(GAME_DATA.values(), roots, strict=True):
            root = _pointed(root, refs)
            name = game_prefix(game) + kind
            if root.get("$ref") != component_ref(name):
                _add_unique(components, {name: root})
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
        variant = _pointed(shared, refs)
        variant["properties"]["game"] = {"type": "string", "const": game.name}
        variant["title"] = game_prefix(game) + name
        _add_unique(components, {variant["title"]: variant})
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
    if "$ref" in pointed:  # ``documented_as``: msgspec keeps the type it refines beside it
        pointed.pop("type", None)
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
"""Beside the contract: the JSON Schema of the playtable match file
(``shared/domain/match_file.py``)."""


CARCASSONNE_TURNS_SCHEMA = "carcassonne-turns.schema.json"
"""Beside it: the JSON Schema of the Carcassonne turn list (``carcassonne_turns.py``)."""


def generated_files(contract_path: Path) -> dict[Path, str]:
    """Every committed file generated from the code, by path: the contract and the schemas
    of the file formats."""
    from services.rules.games import carcassonne_turns
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
