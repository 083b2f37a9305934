"""Request and response bodies of the webhooks API."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from shared.edge.contract import Timestamp, documented_as

TargetUrl = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2000,
        pattern=r"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+",
        extra_json_schema={"format": "uri"},
    ),
]
"""An http(s) URL with a host (the SSRF guard then checks where it leads)."""
EventType = Annotated[str, documented_as("WebhookEventType")]
"""A table's, a game's or ``MatchFinished``: the contract lists them, the API refuses others."""
EventTypes = Annotated[list[EventType], msgspec.Meta(max_length=100)]
DeliveryStatus = Literal["pending", "delivered", "failed", "missed"]
"""Being attempted; delivered; failed for good; skipped while its subscription was disabled."""


class CreateSubscription(msgspec.Struct, forbid_unknown_fields=True):
    """``event_types`` empty: every type; ``table_id``/``match_id`` narrow to one table (and
    the match it starts) or one match."""

    url: TargetUrl
    event_types: EventTypes = []
    table_id: str | None = None
    match_id: str | None = None


class UpdateSubscription(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Fields left out stay as they are; a filter set to null is removed."""

    url: TargetUrl | msgspec.UnsetType = msgspec.UNSET
    event_types: EventTypes | msgspec.UnsetType = msgspec.UNSET
    table_id: str | None | msgspec.UnsetType = msgspec.UNSET
    match_id: str | None | msgspec.UnsetType = msgspec.UNSET
    enabled: bool | msgspec.UnsetType = msgspec.UNSET
    """false: nothing is sent, the deliveries meanwhile are ``missed``; true (if it was
    disabled): they are redelivered, with those that failed while it kept failing."""


class SubscriptionInfo(msgspec.Struct):
    id: str
    url: str
    event_types: list[str]
    table_id: str | None
    match_id: str | None
    enabled: bool
    disabled_reason: str | None
    created_at: Timestamp
    previous_secret_until: str | None
    """While set, the rotated-out secret signs beside the current one until then."""
    failing_since: str | None
    """When the attempts to it started failing, every one since (null: the last succeeded).
    Once they have failed long enough it is disabled, with the reason; enabling it again
    redelivers what it missed."""


class CreatedSubscription(msgspec.Struct):
    subscription: SubscriptionInfo
    secret: str
    """The signing secret (``whsec_...``), shown only now."""


class RotatedSecret(msgspec.Struct):
    secret: str
    """The new signing secret, shown only now."""
    previous_secret_until: str


class AttemptInfo(msgspec.Struct):
    attempted_at: Timestamp
    status_code: int | None
    """The target's answer; null if there was none."""
    duration_ms: float | None
    """How long the answer took; null if there was none."""
    error: str | None
    """Why it failed, coarsely: ``HTTP <status>``, ``timeout``, ``could not connect``,
    ``TLS error``, ``connection dropped``, ``network error`` or a refused target."""


class DeliveryInfo(msgspec.Struct):
    id: int
    webhook_id: str
    event_type: str
    stream_id: str
    status: DeliveryStatus
    created_at: Timestamp
    attempts: list[AttemptInfo]


class DeliveryPage(msgspec.Struct):
    deliveries: list[DeliveryInfo]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; null on the last page."""
    next_after: int | None
    """Deprecated (``next_cursor``): pass as ``after`` for the next page; null on the last."""


class EventTypeInfo(msgspec.Struct):
    type: EventType
    games: list[str]
    """The games whose matches record it; empty for a table's events and ``MatchFinished``."""
    description: str
    sample: Annotated[msgspec.Raw, documented_as("WebhookBody")]
    """A webhook of this type exactly as a receiver gets it (a made-up table, or the first such
    event of a seeded random match, as a spectator sees it)."""


class WebhookPing(msgspec.Struct):
    """A test webhook sent on request (``pingWebhookSubscription``), whatever the
    subscription's event types: the URL receives and can verify webhooks."""

    subscription_id: str
    message: str
