"""What a receiver gets for an event (``WebhookBody``: the Standard Webhooks layout plus the
event's place in its stream) and the key it de-duplicates deliveries by (``event_key``).

Apart from the dispatcher, which builds one for every event it hands to a subscription, because
the samples (``samples``) and the contract (``tools/contract``) build the same bodies without a
dispatcher.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from shared.domain.messages import EventEnvelope
from shared.edge.contract import Timestamp

_json = msgspec.json.Encoder()


class WebhookBody(msgspec.Struct):
    """What a receiver gets: the Standard Webhooks ``type``/``timestamp``/``data`` layout plus
    the event's place in its stream; ``data`` is the spectator's redaction, as published."""

    type: str
    timestamp: Timestamp
    stream_id: str
    version: int
    game: str | None
    """The game of the match whose event it is, which tells whose event ``data`` is (types such
    as ``CardPlayed`` repeat across games); null for a table's events and a ping."""
    data: msgspec.Raw


def event_key(envelope: EventEnvelope) -> str:
    """Unique per event (``MatchFinished`` shares the version of the match's last event); it
    is the ``webhook-id`` receivers de-duplicate by."""
    return f"{envelope.stream_id}:{envelope.version}:{envelope.type}"


def webhook_body(envelope: EventEnvelope) -> bytes:
    occurred = datetime.fromtimestamp(envelope.metadata.occurred_at_ms / 1000, UTC)
    return _json.encode(
        WebhookBody(
            type=envelope.type,
            timestamp=occurred.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            stream_id=envelope.stream_id,
            version=envelope.version,
            game=envelope.game,
            data=envelope.data,
        )
    )
