"""Standard Webhooks signatures: HMAC-SHA256 over ``id.timestamp.body`` with a ``whsec_`` key."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """24 random bytes, base64, behind the prefix receivers' libraries expect."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(
    signing_secrets: list[str], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The three headers; several secrets (during a rotation) give space-separated signatures."""
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(secret, message_id, timestamp, body) for secret in signing_secrets
        ),
    }
