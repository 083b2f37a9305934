"""Bearer tokens: minted once, stored only as hashes."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from litestar import Request

from shared.edge.errors import Problem


def new_token() -> str:
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """Tokens are stored and compared only as hashes."""
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(request: Request[Any, Any, Any]) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(
            401,
            "bad-authorization",
            "Bad Authorization header",
            "use 'Authorization: Bearer <token>'",
        )
    return token.strip()


def required_bearer_token(request: Request[Any, Any, Any]) -> str:
    token = bearer_token(request)
    if token is None:
        raise Problem(
            401, "token-required", "Seat token required", "send 'Authorization: Bearer <token>'"
        )
    return token
