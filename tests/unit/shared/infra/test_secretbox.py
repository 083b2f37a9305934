"""The keyring that seals secrets at rest (``shared/infra/secretbox.py``) and the idempotency
records sealed under it: what opens them, and what does not."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import msgspec
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from services.operator.cli import SEALING
from services.operator.cli import main as playtable
from services.operator.stack import stack_keyring
from shared.edge.errors import Problem
from shared.edge.idempotency import idempotent
from shared.infra.secretbox import Keyring, KeyringError, is_sealed, new_entry
from shared.infra.settings import Settings

OLD, NEW = new_entry("old"), new_entry("new")


def test_a_sealed_value_opens_under_its_key_and_context_only() -> None:
    ring = Keyring.parse(OLD)
    sealed = ring.seal(b"whsec_the-secret", "webhook-secret:sub-1")
    assert is_sealed(sealed) and sealed.startswith("sb1:old:") and "the-secret" not in sealed
    assert ring.open(sealed, "webhook-secret:sub-1") == b"whsec_the-secret"
    with pytest.raises(KeyringError):  # copied onto another row
        ring.open(sealed, "webhook-secret:sub-2")
    with pytest.raises(KeyringError):  # another deployment's key of the same id
        Keyring.parse(new_entry("old")).open(sealed, "webhook-secret:sub-1")
    with pytest.raises(KeyringError, match="no longer holds"):
        Keyring.parse(NEW).open(sealed, "webhook-secret:sub-1")


def test_the_first_key_seals_every_key_opens_and_reseal_moves_to_the_first() -> None:
    old_only = Keyring.parse(OLD)
    rotated = Keyring.parse(f"{NEW},{OLD}")
    sealed = old_only.seal(b"s", "c")
    assert rotated.open(sealed, "c") == b"s"
    resealed = rotated.reseal(sealed, "c")
    assert resealed is not None and resealed.startswith("sb1:new:")
    assert rotated.reseal(resealed, "c") is None  # already under the first key
    assert Keyring.parse(NEW).open(resealed, "c") == b"s"  # the old key can go
    plaintext = rotated.reseal("whsec_stored-in-plaintext", "c")  # a row from before sealing
    assert plaintext is not None and rotated.open(plaintext, "c") == b"whsec_stored-in-plaintext"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "nokey",
        "a b:" + base64.b64encode(b"k" * 32).decode(),
        "a:notbase64!",
        "a:QQ==",
        f"{OLD},{OLD}",
    ],
    ids=["empty", "no-key", "space-in-id", "not-base64", "short-key", "repeated-id"],
)
def test_a_keyring_that_is_not_one_is_refused(text: str) -> None:
    with pytest.raises(KeyringError):
        Keyring.parse(text)


def test_services_that_seal_refuse_to_start_without_a_keyring() -> None:
    with pytest.raises(SystemExit, match="PLAYTABLE_SECRET_KEYS is not set"):
        Settings.from_env({}).keyring()
    with pytest.raises(SystemExit, match="bad PLAYTABLE_SECRET_KEYS"):
        Settings.from_env({"PLAYTABLE_SECRET_KEYS": "k:short"}).keyring()
    assert Settings.from_env({"PLAYTABLE_SECRET_KEYS": f"{NEW},{OLD}"}).keyring().primary == "new"


def _opened_as_before(credential: str, scope: str, key: str, sealed: bytes) -> bytes:
    """How a record sealed under the credential alone opened (before the keyring)."""
    sealing = hmac.new(credential.encode(), f"idempotency\0{scope}\0{key}".encode(), hashlib.sha256)
    return AESGCM(sealing.digest()).decrypt(sealed[:12], sealed[12:], scope.encode())


def test_an_idempotency_record_opens_with_neither_the_server_key_nor_the_credential_alone() -> None:
    """A re-seat's record is its app's, whose id is no secret: the row must not open with it."""
    ring = Keyring.parse(OLD)
    record = idempotent("match-reseat:m:1", "retry-1", "app-public-id", b"body")
    assert record is not None
    reply = b'{"token":"the-new-seat-token"}'
    sealed = record.seal(reply, ring)
    assert b"the-new-seat-token" not in sealed
    assert record.unseal(sealed, ring) == reply
    with pytest.raises((InvalidTag, ValueError)):  # the app id alone, as before
        _opened_as_before("app-public-id", record.scope, "retry-1", sealed)
    other_ring = Keyring.parse(new_entry("old"))  # the credential, but not the server's key
    with pytest.raises(Problem):
        record.unseal(sealed, other_ring)
    forged = msgspec.structs.replace(record, credential="another-app")  # the server's key
    with pytest.raises(Problem):
        forged.unseal(sealed, ring)


@pytest.mark.parametrize("service", sorted(SEALING))
def test_a_service_that_seals_will_not_start_without_a_keyring(
    service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLAYTABLE_SECRET_KEYS", raising=False)
    with pytest.raises(SystemExit, match="PLAYTABLE_SECRET_KEYS is not set"):
        playtable([service])


def test_the_stack_keeps_one_keyring_for_its_user(tmp_path: Path) -> None:
    """Made once, readable only by its user, and the same at every start (so a stack started
    again opens what it sealed), unless the environment names one."""
    env = {"XDG_STATE_HOME": str(tmp_path)}
    first = stack_keyring(env)
    kept = tmp_path / "playtable" / "secret_keys"
    assert Keyring.parse(first).primary == "stack" and kept.stat().st_mode & 0o777 == 0o600
    assert stack_keyring(env) == first
    assert stack_keyring({**env, "PLAYTABLE_SECRET_KEYS": NEW}) == NEW
