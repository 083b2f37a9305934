"""The fixed values every example is made of: the story's ids, names and moments, visibly
fake secrets and tickets, and the encoder the services use (so the contract is the same on
every build)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from services.match import schemas as match_api
from services.webhooks.signing import SECRET_PREFIX
from shared.domain.messages import EventMetadata
from shared.edge.feed_tickets import TICKET_PREFIX, TICKET_TTL_S, FeedTicket

GAME = "hanabi"
SEED = 20250606
PLAYERS = ["Alice", "Bob"]
TABLE_NAME = "Friday fireworks"
TABLE_OPTIONS = {"suits": 5}
TABLE_ID = "5d1f0c3ab7e24f0e9c8b6a4d2e1f3a57"
MATCH_ID = "8c3e5a7b9d1f4e2a8b6c0d9e7f5a3b1c"
IMPORTED_MATCH_ID = "2a4c6e8f0b1d4a3c9e7f5b3d1a8c6e4f"
SUBSCRIPTION_ID = "b7e9d1c3a5f74b2e8d0c6a4f2e9b1d3c"
DELIVERY_ID = 41
APP_ID = "e4a2c6b8d0f14e3a9c7b5d3f1e8a6c42"
APP_NAME = "Fireworks Night"
KEY_ID = "9f7d5b3a1c8e4f6a2d0b9c7e5a3f1d8b"
HOOK_URL = "https://hooks.example.com/playtable"

TAKEOVER_BOT = f"{GAME}-heuristic"
REMATCH_TABLE_ID = "3f2e1d0c9b8a47a6b5c4d3e2f1a0b9c8"
PATH_VALUES = {
    "game": GAME,
    "table_id": TABLE_ID,
    "seat": 1,
    "match_id": MATCH_ID,
    "subscription_id": SUBSCRIPTION_ID,
    "delivery_id": DELIVERY_ID,
    "app_id": APP_ID,
    "key_id": KEY_ID,
}
"""The path parameters of the example requests: the ``instance`` of their problems."""

STORY_START = datetime(2025, 6, 6, 19, 30, tzinfo=UTC)
TABLE_EVENT_TIMES_S = (0, 20, 65, 90)
"""When the table was created, Alice sat, Bob sat and Alice started it."""
MATCH_CREATED_S = 91
SECONDS_PER_MOVE = 40

ENCODER = msgspec.json.Encoder()


class MissingExample(LookupError):
    """The contract and the examples disagree: a route has no example, or one has no route."""


def example_path(template: str) -> str:
    return template.format(**PATH_VALUES)


def nul_in(template: str) -> str:
    """The example path with a NUL ending each text parameter (the route still matches)."""
    values = {name: f"{v}\x00" if isinstance(v, str) else v for name, v in PATH_VALUES.items()}
    path = template.format(**values)
    if "\x00" not in path:
        raise MissingExample(f"{template} has no text parameter to hold a NUL: add its 400")
    return path


def fake_token(holder: str) -> str:
    """A seat or invitation token that no one could mistake for a real one."""
    return f"example-{holder}-token-not-a-secret"


def fake_signing_secret(number: int) -> str:
    """A signing secret in the real format (24 bytes, base64), which decodes to a confession."""
    return SECRET_PREFIX + base64.b64encode(f"example signing secret {number}".encode()).decode()


def at(seconds: float) -> str:
    """A moment of the story as the services show times (Postgres' ``isoformat``)."""
    return (STORY_START + timedelta(seconds=seconds)).isoformat()


def feed_ticket(feed: str, given_at_s: float) -> FeedTicket:
    """A ticket to a feed of the story, given at ``given_at_s``."""
    ticket = f"{TICKET_PREFIX}example-{feed}-feed-ticket-not-a-secret"
    return FeedTicket(ticket=ticket, expires_at=at(given_at_s + TICKET_TTL_S))


def status_of(result: dict[str, Any] | None) -> match_api.PlayStatus:
    return "running" if result is None else "finished"


def metadata(version: int) -> EventMetadata:
    return EventMetadata(event_id=f"example-event-{version}", correlation_id="example")
