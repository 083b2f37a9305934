"""Commitments to secret options, and sealed idempotency records: what each promises, in-process."""

from __future__ import annotations

import pytest

from shared.domain.commitments import commit, commitment_of
from shared.edge.errors import Problem
from shared.edge.idempotency import idempotent
from shared.infra.secretbox import Keyring, new_entry


def test_a_commitment_opens_only_with_its_salt_and_value() -> None:
    deck = [11, 12, 13, 1, 2]
    committed = commit({"deck": deck, "suits": 5}, {"deck", "tiles"})
    assert set(committed) == {"deck"}  # only secret options that are set
    kept = committed["deck"]
    assert kept.value == deck and len(kept.salt) == 32
    assert commitment_of(kept.salt, deck) == kept.commitment
    assert commitment_of(kept.salt, [12, 11, 13, 1, 2]) != kept.commitment
    assert commit({"deck": deck}, {"deck"})["deck"].commitment != kept.commitment  # salted


def test_key_order_does_not_change_a_commitment() -> None:
    assert commitment_of("s", {"a": 1, "b": [2]}) == commitment_of("s", {"b": [2], "a": 1})


def test_an_idempotency_record_is_its_callers_own_and_sealed() -> None:
    first = idempotent("lobby:join:t", "join-1", "victim-key", b"body")
    other = idempotent("lobby:join:t", "join-1", "attacker-key", b"body")
    assert first is not None and other is not None
    assert first.scope != other.scope and first.fingerprint == other.fingerprint
    reply = b'{"token":"the-seat-token"}'
    ring = Keyring.parse(new_entry("k"))
    sealed = first.seal(reply, ring)
    assert b"the-seat-token" not in sealed and first.unseal(sealed, ring) == reply
    forged = idempotent(first.scope.rsplit(":", 1)[0], "join-1", "attacker-key", b"body")
    assert forged is not None
    with pytest.raises(Problem):
        forged.unseal(sealed, ring)
    assert idempotent("lobby:join:t", None, "victim-key") is None
