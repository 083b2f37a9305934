"""The contract's ``webhooks``: what a subscriber's URL receives for each event type, and the
event types a subscription may name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from shared.domain.hosting import HOSTING_EVENT_TYPES
from shared.domain.messages import MATCH_FINISHED, TABLE_EVENT_TYPES, FinishedMatch
from shared.domain.rules_api import GameSamples
from shared.edge.contract import COMPONENT_REF, component_ref
from tools.contract.games import game_prefix
from tools.contract.schemas import add_unique

if TYPE_CHECKING:
    from services.rules.games.contract import Game
    from services.webhooks.schemas import EventTypeInfo


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
"""What a receiver's answer does (``services/webhooks/attempts.py``)."""


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
    add_unique(components, {"FinishedMatch": _finished_match()})
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
            add_unique(components, {name: {**variant, "title": name}})
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
