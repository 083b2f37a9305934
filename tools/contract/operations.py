"""What the contract says about its operations beyond the apps' own schemas: how a client
goes on from an answer (links), the headers beside a problem, the events of the live feeds,
and every problem type the API answers with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from shared.domain.messages import TableEvent
from shared.edge.contract import component_ref
from shared.edge.errors import PROBLEM_TYPE_BASE
from tools.contract.schemas import operations_by_id

if TYPE_CHECKING:
    from services.rules.games.contract import Game


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
    operations = operations_by_id(contract)
    for (operation_id, status), headers in PROBLEM_HEADERS.items():
        operations[operation_id]["responses"][status].setdefault("headers", {}).update(headers)


def add_links(contract: dict[str, Any]) -> None:
    operations = operations_by_id(contract)
    for (source, status), links in LINKS.items():
        for link in links.values():
            if link["operationId"] not in operations:
                raise ValueError(f"a link from {source} names no operation: {link}")
        operations[source]["responses"][status]["links"] = links


def document_feeds(contract: dict[str, Any], games: dict[str, Game]) -> None:
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
    operations = operations_by_id(contract)
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
