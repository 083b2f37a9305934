"""Secrets at rest: AES-GCM under a keyring from the environment (``PLAYTABLE_SECRET_KEYS``).

What a service must read back (a webhook's signing secret, the key bot tokens derive from) is
stored sealed, never as it is: ``sb1:<key id>:<base64 of nonce and ciphertext>``, the id naming
the keyring's key that sealed it, so that a keyring with a new key first still opens what the
old key sealed (until ``playtable secrets rotate`` re-seals it under the new one). The AES key
is derived from the keyring's key and, where given, a second secret (``bound``: an idempotency
record's caller's credential), so a sealed value opens only with both. ``context`` (the row's
identity) is authenticated: a sealed value copied onto another row does not open there.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MARKER = "sb1"
"""Starts every sealed value: anything else stored where a sealed value belongs is plaintext
written before secrets were sealed (an upgrade's rows), sealed by the owning service."""
KEY_BYTES = 32
NONCE_BYTES = 12
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


class KeyringError(ValueError):
    """A keyring that is not one, or a sealed value that does not open with it."""


class Keyring:
    """Named AES-256 keys: the first seals, every one opens what it sealed."""

    def __init__(self, keys: list[tuple[str, bytes]]) -> None:
        if not keys:
            raise KeyringError("no key")
        self.keys = dict(keys)
        if len(self.keys) != len(keys):
            raise KeyringError("a key id appears twice")
        self.primary = keys[0][0]

    @classmethod
    def parse(cls, text: str) -> Keyring:
        """``id:base64key,id:base64key``: the first entry seals."""
        keys = []
        for number, entry in enumerate((part.strip() for part in text.split(",")), 1):
            key_id, colon, encoded = entry.partition(":")
            if not colon or not _KEY_ID.fullmatch(key_id):
                raise KeyringError(f"entry {number} is not id:base64key (id: [A-Za-z0-9_-]+)")
            try:
                key = base64.b64decode(encoded, validate=True)
            except binascii.Error:
                raise KeyringError(f"key {key_id!r} is not base64") from None
            if len(key) != KEY_BYTES:
                raise KeyringError(f"key {key_id!r} has {len(key)} bytes, not {KEY_BYTES}")
            keys.append((key_id, key))
        return cls(keys)

    def seal(self, plaintext: bytes, context: str, *, bound: bytes = b"") -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(self._key(self.primary, bound)).encrypt(nonce, plaintext, context.encode())
        return f"{MARKER}:{self.primary}:{base64.b64encode(nonce + sealed).decode()}"

    def open(self, sealed: str, context: str, *, bound: bytes = b"") -> bytes:
        marker, key_id, encoded = (sealed.split(":", 2) + ["", ""])[:3]
        if marker != MARKER:
            raise KeyringError("not a sealed value")
        if key_id not in self.keys:
            raise KeyringError(f"sealed under key {key_id!r}, which the keyring no longer holds")
        try:
            raw = base64.b64decode(encoded, validate=True)
            nonce, ciphertext = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
            return AESGCM(self._key(key_id, bound)).decrypt(nonce, ciphertext, context.encode())
        except (binascii.Error, InvalidTag):
            raise KeyringError(f"a value sealed under key {key_id!r} does not open") from None

    def reseal(self, stored: str, context: str) -> str | None:
        """``stored`` sealed under the first key (plaintext is sealed); None if it already is."""
        if is_sealed(stored) and stored.split(":", 2)[1] == self.primary:
            return None
        plaintext = self.open(stored, context) if is_sealed(stored) else stored.encode()
        return self.seal(plaintext, context)

    def _key(self, key_id: str, bound: bytes) -> bytes:
        return hmac.new(self.keys[key_id], b"secretbox\0" + bound, hashlib.sha256).digest()


def is_sealed(stored: str) -> bool:
    return stored.startswith(MARKER + ":")


def new_entry(key_id: str) -> str:
    """A keyring entry with a fresh random key: ``id:base64key``."""
    return f"{key_id}:{base64.b64encode(os.urandom(KEY_BYTES)).decode()}"
