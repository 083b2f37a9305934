"""Commitments to a table's secret options: anyone can tell a stacked deck was fixed in advance
and, once the match is over, check it was the one played.

When a table is created, each secret option its creator set (an explicit deck order, say) is
published as ``sha256(salt + ":" + value)``, the value as compact JSON with sorted keys and the
salt 32 random hex digits, so no one can guess the value from the hash. A finished match's
exported file reveals each value with its salt.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import msgspec

_canonical = msgspec.json.Encoder(order="sorted")


class Commitment(msgspec.Struct, frozen=True):
    """One secret option's commitment, with what opens it (kept until the match is over)."""

    commitment: str
    salt: str
    value: Any


_stored_decoder = msgspec.json.Decoder(dict[str, Commitment])


def stored(data: bytes) -> dict[str, Commitment]:
    """Commitments as a table or a match row keeps them."""
    return _stored_decoder.decode(data)


def published(committed: dict[str, Commitment]) -> dict[str, str]:
    """What everyone sees before the end: each option's hash, never its salt or value."""
    return {name: kept.commitment for name, kept in committed.items()}


def commitment_of(salt: str, value: Any) -> str:
    return hashlib.sha256(salt.encode() + b":" + _canonical.encode(value)).hexdigest()


def commit(options: dict[str, Any], secret: set[str]) -> dict[str, Commitment]:
    """A commitment to each secret option that is set."""
    committed = {}
    for name in sorted(secret):
        value = options.get(name)
        if value is not None:
            salt = secrets.token_hex(16)
            committed[name] = Commitment(commitment_of(salt, value), salt, value)
    return committed
