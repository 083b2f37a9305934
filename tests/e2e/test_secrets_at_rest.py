"""Secrets at rest, as someone who reads the database would try them: webhook signing secrets,
the key every bot token derives from and the idempotency records' answers are stored sealed
under the keyring (``PLAYTABLE_SECRET_KEYS``), so a copy of the tables yields none of them; and
``playtable secrets rotate`` moves everything to a new key, after which the old one can go while
webhooks still verify under the same signing secret and bots still play their seats."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from services.operator.keys import fresh_key
from shared.domain.hosting import bot_token
from shared.edge.errors import Problem
from shared.edge.idempotency import Idempotent
from shared.edge.tokens import hash_token
from shared.infra.secretbox import Keyring, new_entry
from shared.infra.settings import Settings
from tests.conftest import SECRET_KEYS, TEST_APP, create_database, drop_database, with_database
from tests.e2e.conftest import Stack, running_stack
from tests.e2e.test_bot_service import (
    HEURISTIC,
    Bots,
    assert_turns_alternate,
    movers,
    play_person,
    with_a_bot,
)
from tests.e2e.webhooks.service import Hooks, eventually, running_webhooks

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    with running_stack(database_url, redis_url) as running:
        Bots(running).start("bots")
        yield running


@pytest.fixture(scope="module")
def hooks(stack: Stack) -> Iterator[Hooks]:
    with running_webhooks(stack) as running:
        yield running


def rows(database_url: str, query: str, *params: object) -> list[tuple[object, ...]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(query, params).fetchall()


def opened_as_before(credential: str, scope: str, key: str, body: bytes) -> bytes | None:
    """An idempotency record opened the way it was sealed before the keyring: under a key
    derived from the caller's credential and the Idempotency-Key alone (None: it does not)."""
    sealing = hmac.new(credential.encode(), f"idempotency\0{scope}\0{key}".encode(), hashlib.sha256)
    try:
        return AESGCM(sealing.digest()).decrypt(body[:12], body[12:], scope.encode())
    except Exception:
        return None


def test_webhook_signing_secrets_are_stored_sealed(stack: Stack, hooks: Hooks) -> None:
    name = f"at-rest-{uuid.uuid4().hex[:6]}"
    subscription = hooks.subscribe(name)
    first = hooks.receiver.secrets[name][0]
    rotated = hooks.api.post(f"/webhooks/subscriptions/{subscription['id']}/rotate-secret")
    assert rotated.status_code == 200, rotated.text
    second = rotated.json()["secret"]

    ((secret, previous),) = rows(
        stack.env["DATABASE_URL"],
        "select secret, previous_secret from webhook_subscriptions where id = %s",
        subscription["id"],
    )
    for stored in (secret, previous):
        assert isinstance(stored, str) and stored.startswith("sb1:")
        for plaintext in (first, second):
            assert plaintext.removeprefix("whsec_") not in stored
    everything = rows(stack.env["DATABASE_URL"], "select secret from webhook_subscriptions")
    assert all(str(row[0]).startswith("sb1:") for row in everything)


def test_the_bots_key_is_stored_sealed_and_still_gives_the_bots_their_seats(
    stack: Stack,
) -> None:
    match_id, _token = with_a_bot(stack)
    ((stored,),) = rows(
        stack.env["DATABASE_URL"], "select secret from hosting_secrets where name = 'bots'"
    )
    assert isinstance(stored, str) and stored.startswith("sb1:")
    secret = Keyring.parse(SECRET_KEYS).open(stored, "hosting-secret:bots")
    assert secret.decode() not in stored
    ((bot_seat_hash,),) = rows(
        stack.env["DATABASE_URL"],
        "select token_hash from match_seats where match_id = %s and seat = 1",
        match_id,
    )
    assert hash_token(bot_token(secret, match_id, 1)) == bot_seat_hash  # the key it seals


def test_a_reseat_record_does_not_open_with_the_app_id_nor_a_join_with_a_public_key(
    stack: Stack,
) -> None:
    """A re-seat's idempotency record was sealed under the app's id: anyone reading the table
    got the seat's new token. A join's under a publishable key, which every browser holds."""
    database_url = stack.env["DATABASE_URL"]
    match_id, _token = with_a_bot(stack)
    key = uuid.uuid4().hex
    reseated = stack.match.post(
        f"/matches/{match_id}/seats/1/token", json={}, headers={"Idempotency-Key": key}
    )
    assert reseated.status_code == 201, reseated.text
    ((app_id,),) = rows(database_url, "select app_id from matches where match_id = %s", match_id)
    ((scope, body),) = rows(
        database_url,
        "select scope, body from idempotency where scope like %s and key = %s",
        f"match-reseat:{match_id}:1:%",
        key,
    )
    body = bytes(body)
    assert reseated.json()["token"].encode() not in body
    credentials = [str(app_id), stack.app_key]  # what a re-seat's record is the caller's by
    for credential in credentials:
        assert opened_as_before(credential, scope, key, body) is None
    server, elsewhere = Keyring.parse(SECRET_KEYS), Keyring.parse(new_entry("tests"))
    opened = []
    for credential in credentials:
        record = Idempotent(scope=scope, key=key, fingerprint="", credential=credential)
        with pytest.raises(Problem):  # the credential under any key but the server's
            record.unseal(body, elsewhere)
        with contextlib.suppress(Problem):
            opened.append(record.unseal(body, server))
    assert opened == [reseated.content]  # the server's key and the caller's credential

    publishable = asyncio.run(
        fresh_key(Settings(database_url=database_url), TEST_APP, "at-rest", kind="publishable")
    )
    table = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2})
    assert table.status_code == 201, table.text
    join_key = uuid.uuid4().hex
    joined = stack.lobby.post(
        f"/tables/{table.json()['table_id']}/seats",
        json={"name": "ada"},
        headers={"X-API-Key": publishable, "Idempotency-Key": join_key},
    )
    assert joined.status_code == 201, joined.text
    ((scope, body),) = rows(
        database_url,
        "select scope, body from idempotency where key = %s and scope like %s",
        join_key,
        f"%:{hash_token(publishable)[:32]}",
    )
    body = bytes(body)
    assert joined.json()["token"].encode() not in body
    assert opened_as_before(publishable, scope, join_key, body) is None


class Enough(Exception):
    pass


def stop_after(moves: int) -> Callable[[int], None]:
    def after(made: int) -> None:
        if made == moves:
            raise Enough

    return after


@pytest.fixture
def own_database(postgres_server_url: str) -> Iterator[str]:
    """A database of the rotation's own: its keys are not the session's."""
    name = f"playtable_test_rotation_{uuid.uuid4().hex[:8]}"
    create_database(postgres_server_url, name)
    try:
        yield with_database(postgres_server_url, name)
    finally:
        drop_database(postgres_server_url, name)


def rotate(database_url: str, keys: str, exit_code: int = 0) -> str:
    """``playtable secrets rotate`` with the keyring ``keys``: what it printed."""
    env = {"DATABASE_URL": database_url, "PLAYTABLE_SECRET_KEYS": keys, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "services.operator.cli", "secrets", "rotate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == exit_code, done.stderr
    return done.stdout + done.stderr


def test_rotating_then_dropping_the_old_key_keeps_webhooks_and_bots_working(
    own_database: str, redis_url: str
) -> None:
    old, new = new_entry("old"), new_entry("new")
    with running_stack(own_database, redis_url, PLAYTABLE_SECRET_KEYS=old) as before:
        Bots(before).start("bots")
        match_id, token = with_a_bot(before)
        with running_webhooks(before) as hooks:
            name = "rotated"
            subscription = hooks.subscribe(name, match_id=match_id)
            secret = hooks.receiver.secrets[name][0]
            with pytest.raises(Enough):  # two moves of the person's, so one of the bot's
                play_person(before, match_id, token, after_move=stop_after(2))
            eventually(lambda: hooks.receiver.verified(name), what="a delivery before")

    printed = rotate(own_database, f"{new},{old}")
    assert "2 secret(s) re-sealed under key 'new'" in printed, printed
    stored = rows(
        own_database,
        "select secret from webhook_subscriptions union all select secret from hosting_secrets",
    )
    assert len(stored) == 2 and all(str(row[0]).startswith("sb1:new:") for row in stored)
    assert "0 secret(s)" in rotate(own_database, f"{new},{old}")  # nothing left to move
    refused = rotate(own_database, old, exit_code=1)  # the new key dropped by mistake
    assert "sealed under key 'new', which the keyring no longer holds" in refused, refused

    with running_stack(own_database, redis_url, PLAYTABLE_SECRET_KEYS=new) as after:
        Bots(after).start("bots")
        with running_webhooks(after) as hooks:
            name = "rotated"
            hooks.receiver.secrets[name] = [secret]  # verifies with the same signing secret
            moved = hooks.api.patch(
                f"/webhooks/subscriptions/{subscription['id']}",
                json={"url": f"{hooks.receiver.url}/{name}"},
            )
            assert moved.status_code == 200, moved.text
            final = play_person(after, match_id, token)  # the bot keeps playing its seat
            assert final["status"] == "finished" and final["players"][1] == HEURISTIC
            assert_turns_alternate(movers(after, match_id))
            eventually(
                lambda: any(
                    received.body["version"] == final["version"]
                    for received in hooks.receiver.verified(name)
                ),
                what="the match's last event, delivered and verified after the rotation",
            )
