"""Malformed requests to every lobby and match route (``hostile_requests``), each of which
must be refused with a 4xx problem document, never a 5xx."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HostileRequest:
    service: str
    """``lobby`` or ``match``."""
    method: str
    path: str
    """Sent as it is: already percent-encoded where it needs to be."""
    label: str
    headers: tuple[tuple[str, bytes], ...] = ()
    content: bytes | None = None
    refused_with: int | None = None
    """The one status its refusal may have, where only one is right (else any 4xx)."""


@dataclass
class Known:
    """Real ids and a real seat token, so malformed requests reach past the id look-ups."""

    table_id: str
    match_id: str
    token: str


HUGE = "99999999999999999999"
HUGE_INT = 99999999999999999999


def _deep(depth: int, kind: str) -> bytes:
    if kind == "list":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def hostile_requests(rng: random.Random, known: Known) -> Iterator[HostileRequest]:
    """Endless malformed requests, each of which the service must refuse with a 4xx problem."""
    table, match, token = known.table_id, known.match_id, known.token
    bearer = ("Authorization", f"Bearer {token}".encode())
    as_json = ("Content-Type", b"application/json")

    def junk(size: int = 64) -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, size)))

    def bad_id() -> str:
        return rng.choice(
            [
                uuid.uuid4().hex,
                "%00",
                f"{uuid.uuid4().hex[:8]}%00x",
                "x" * 3000,
                "%C3%A9t%C3%A9%E2%80%8B",
                "%FF%FE",
                HUGE,
                "..%2F..%2Fetc",
            ]
        )

    def bad_auth(malformed_only: bool = False) -> tuple[str, bytes]:
        """A malformed Authorization header (401), or else one naming no seat (403 where a
        seat is needed; on a public table's read it is only a spectator)."""
        malformed = [b"Bearer", b"Basic dXNlcjpwYXNz", b"bearer\tx y z", b"Token abc", b"\xff"]
        unknown = [b"Bearer " + b"A" * 9000, b"Bearer \xff\xfe\xfd", b"Bearer not-a-token"]
        return ("Authorization", rng.choice(malformed if malformed_only else malformed + unknown))

    def bad_key() -> tuple[str, bytes]:
        return ("Idempotency-Key", rng.choice([b"k" * 256, b"k" * 5000]))

    def odd_key() -> tuple[str, bytes]:
        return ("Idempotency-Key", rng.choice([b"\xff\xfe", b"k" * 256, b"\xc3\xa9", b"a b"]))

    def body_junk() -> bytes:
        return rng.choice(
            [
                junk(),
                _deep(1000, "list"),
                _deep(1000, "object"),
                b"",
                b"{",
                b"null",
                b'"\\u0000"',
                b"\x00\x00\x00",
                b'{"a": NaN}',
                b"1e999999",
            ]
        )

    table_bodies = [
        {"game": "hanabi\u0000", "seats": 2},
        {"game": "hanabi", "seats": "2"},
        {"game": "hanabi", "seats": 2, "options": {"suits": 5.5}},
        {"game": "hanabi", "seats": 2, "options": {"suits": "five"}},
        {"game": "hanabi", "seats": HUGE_INT},
        {"game": "hanabi", "seats": -HUGE_INT},
        {"game": "hanabi", "seats": 2, "seed": HUGE_INT},
        {"game": "hanabi", "seats": 2, "seed": "x"},
        {"game": "hanabi", "seats": 2, "options": "x"},
        {"game": "hanabi", "seats": 2, "options": {"deck": [HUGE_INT]}},
        {"game": "hanabi", "seats": 2, "options": {"\u0000": 1}},
        {"game": "hanabi", "seats": 2, "visibility": "\u0000"},
        {"game": 5, "seats": 2},
        {"game": "no-such-game", "seats": 2},
        {"game": "hanabi", "seats": 2, "name": "a\u0000b"},
        [],
        "hanabi",
    ]
    discard = {"type": "Discard", "card": 0}
    named_moves = [
        {"expected_version": HUGE_INT, "action": {"type": "Discard", "card": 0}},
        {"expected_version": -HUGE_INT, "action": {"type": "Discard", "card": 0}},
        {"expected_version": "1", "action": {"type": "Discard", "card": 0}},
        {"expected_version": 1, "action": "Discard"},
        {"expected_version": 1, "action": {"type": "Discard\u0000", "card": 0}},
        {"expected_version": 1, "action": {"type": "Discard", "card": HUGE_INT}},
        {"expected_version": 1, "action": {"type": "Discard", "card": 1.5}},
        {"expected_version": 1.5, "action": {"type": "Discard", "card": 0}},
        {"expected_version": 1},
        {"action": {"type": "Discard", "card": 0}},
        {"expected_version": 1, "action": {}},
        {"expected_version": 1, "action": {"type": 5}},
    ]
    move_bodies = [
        *({"game": "hanabi", **body} for body in named_moves),
        {"expected_version": 1, "action": discard},
        {"game": "dingo", "expected_version": 1, "action": {"type": "PlayCard", "card": "a-1"}},
        {"game": "hanabi\u0000", "expected_version": 1, "action": discard},
        {"game": 5, "expected_version": 1, "action": discard},
        {"game": None, "expected_version": 1, "action": discard},
    ]
    import_bodies = [
        {"document": "x"},
        {"document": {"format": "playtable-match", "format_version": HUGE_INT}},
        {"document": {"format": "playtable-match\u0000"}, "game": "hanabi"},
        {
            "document": {
                "format": "playtable-match",
                "format_version": 1,
                "game": "hanabi",
                "options": {},
                "players": ["a\u0000"],
                "status": "finished",
                "result": None,
                "events": [
                    {"version": HUGE_INT, "type": "x", "data": {}, "seat": None, "recorded_at": "x"}
                ],
            }
        },
        {"document": {"players": [], "actions": [{"type": HUGE_INT}]}, "game": "hanabi"},
        {"document": {}, "game": "no-such-game"},
        {"document": [], "game": 5},
    ]

    def choose(options: list[Any]) -> bytes:
        return _json_bytes(rng.choice(options))

    def loose_integer() -> str:
        """An integer Litestar would read, though not in decimal digits: always a 400."""
        return rng.choice(["1e3", "2.0", "%2B1", "1_0", "%D9%A1", "0x1", "1%20"])

    loose_reads = [
        lambda: f"/matches/{match}/events?after={loose_integer()}",
        lambda: f"/matches/{match}/events?limit={loose_integer()}",
        lambda: f"/matches/{match}/actions?version={loose_integer()}",
        lambda: f"/matches/{match}/replay?version={loose_integer()}",
        lambda: f"/matches/{match}/replay?version=1&full={rng.choice(['1', 'True', 'yes'])}",
        lambda: f"/matches/{match}/feed?after={loose_integer()}",
    ]
    loose_actions = [
        {"type": "Discard", "card": 0, "extra": 1},
        {"type": "PlayCard", "card": 0, "seat": 0},
        {"type": "DiscardCard", "card": 0, "card2": 1},
    ]

    makers = [
        # lobby
        lambda: HostileRequest("lobby", "POST", "/tables", "tables junk", (as_json,), body_junk()),
        lambda: HostileRequest(
            "lobby", "POST", "/tables", "tables bad body", (as_json,), choose(table_bodies)
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            "/tables",
            "tables bad key",
            (as_json, bad_key()),
            _json_bytes({"game": "hanabi", "seats": 2}),
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            "/tables",
            "tables odd key and body",
            (as_json, odd_key()),
            choose(table_bodies),
        ),
        lambda: HostileRequest(
            "lobby",
            "GET",
            rng.choice(
                [
                    f"/tables?limit={HUGE}",
                    "/tables?limit=0",
                    "/tables?limit=abc",
                    "/tables?cursor=!!!garbage!!!",
                    f"/tables?cursor={uuid.uuid4().hex}",
                    "/tables?cursor=%00",
                    "/tables?cursor=eyJ4IjoxfQ",
                    f"/tables?cursor={HUGE}",
                    f"/tables?limit=-{HUGE}",
                ]
            ),
            "tables list params",
        ),
        lambda: HostileRequest("lobby", "GET", f"/tables/{bad_id()}", "table unknown id"),
        lambda: HostileRequest("lobby", "GET", f"/games/{bad_id()}", "game unknown id"),
        lambda: HostileRequest(
            "lobby", "GET", f"/tables/{table}", "table bad auth", (bad_auth(malformed_only=True),)
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            f"/tables/{bad_id()}/seats",
            "join unknown",
            (as_json,),
            _json_bytes({"name": "x"}),
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            f"/tables/{table}/seats",
            "join bad body",
            (as_json,),
            rng.choice(
                [
                    body_junk(),
                    _json_bytes({"name": 5}),
                    _json_bytes({"name": "a\u0000b"}),
                    _json_bytes({"name": "x" * 100_000}),
                    _json_bytes({"name": ["x"]}),
                ]
            ),
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            f"/tables/{table}/seats",
            "join bad key",
            (as_json, bad_key()),
            _json_bytes({"name": "x"}),
        ),
        lambda: HostileRequest(
            "lobby",
            "DELETE",
            rng.choice(
                [
                    f"/tables/{table}/seats/{HUGE}",
                    f"/tables/{table}/seats/-1",
                    f"/tables/{table}/seats/abc",
                    f"/tables/{bad_id()}/seats/0",
                    f"/tables/{table}/seats/0",
                ]
            ),
            "leave bad",
            (rng.choice([bad_auth(), bearer]),),
        ),
        lambda: HostileRequest(
            "lobby",
            "POST",
            f"/tables/{rng.choice([table, bad_id()])}/start",
            "start bad auth",
            (bad_auth(),),
        ),
        lambda: HostileRequest(
            "lobby", "POST", f"/tables/{bad_id()}/start", "start unknown", (bearer,)
        ),
        lambda: HostileRequest(
            "lobby", "POST", f"/tables/{table}/start", "start bad key", (bearer, bad_key())
        ),
        lambda: HostileRequest(
            "lobby",
            "GET",
            rng.choice(
                [
                    f"/tables/{bad_id()}/feed",
                    f"/tables/{table}/feed?after={HUGE}",
                    f"/tables/{table}/feed?after=-1",
                    f"/tables/{table}/feed?after=abc",
                ]
            ),
            "table feed bad",
        ),
        lambda: HostileRequest(
            "lobby",
            "GET",
            f"/tables/{table}/feed",
            "table feed bad id",
            (("Last-Event-ID", rng.choice([b"abc", HUGE.encode(), b"-1", b"\xff"])),),
        ),
        # match
        lambda: HostileRequest("match", "GET", f"/matches/{bad_id()}", "match unknown id"),
        lambda: HostileRequest(
            "match", "GET", f"/matches/{match}", "match bad auth", (bad_auth(),)
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            f"/matches/{rng.choice([match, bad_id()])}/actions",
            "actions bad auth",
            rng.choice([(), (bad_auth(),)]),
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{match}/actions",
            "move junk",
            (as_json, bearer),
            body_junk(),
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{match}/actions",
            "move bad body",
            (as_json, bearer, ("Idempotency-Key", uuid.uuid4().hex.encode())),
            choose(move_bodies),
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{match}/actions",
            "move bad key",
            (as_json, bearer, bad_key()),
            _json_bytes({"game": "hanabi", "expected_version": 1, "action": discard}),
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{bad_id()}/actions",
            "move unknown",
            (as_json, bearer),
            choose(move_bodies),
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{match}/actions",
            "move bad auth",
            (as_json, bad_auth()),
            choose(move_bodies),
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            rng.choice(
                [
                    f"/matches/{match}/events?after={HUGE}",
                    f"/matches/{match}/events?limit={HUGE}",
                    f"/matches/{match}/events?after=-1",
                    f"/matches/{match}/events?limit=0",
                    f"/matches/{match}/events?after=abc",
                    f"/matches/{bad_id()}/events",
                    f"/matches/{match}/events?after=%00",
                ]
            ),
            "events bad params",
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            rng.choice(
                [
                    f"/matches/{match}/replay?version={HUGE}",
                    f"/matches/{match}/replay?version=0",
                    f"/matches/{match}/replay",
                    f"/matches/{match}/replay?version=abc",
                    f"/matches/{match}/replay?version=1&full=maybe",
                    f"/matches/{match}/replay?version=1&full=true",
                    f"/matches/{bad_id()}/replay?version=1",
                ]
            ),
            "replay bad params",
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            rng.choice(
                [
                    f"/matches/{match}/export?format=bogus",
                    f"/matches/{match}/export?format=%00",
                    f"/matches/{bad_id()}/export",
                    f"/matches/{match}/export",
                ]
            ),
            "export bad",
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            "/matches/import",
            "import junk",
            (as_json,),
            rng.choice([body_junk(), choose(import_bodies)]),
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            rng.choice(
                [
                    f"/matches/{bad_id()}/feed",
                    f"/matches/{match}/feed?after={HUGE}",
                    f"/matches/{match}/feed?after=abc",
                    f"/matches/{match}/feed?after=-1",
                ]
            ),
            "match feed bad",
        ),
        lambda: HostileRequest(
            "match",
            "GET",
            f"/matches/{match}/feed",
            "match feed bad id",
            (("Last-Event-ID", rng.choice([b"abc", HUGE.encode(), b"-1", b"\xff"])),),
        ),
        # loose forms: a parameter in a form Litestar would convert, an action's extra field
        lambda: HostileRequest(
            "match", "GET", rng.choice(loose_reads)(), "loose match params", (bearer,), None, 400
        ),
        lambda: HostileRequest(
            "lobby",
            "GET",
            f"/tables/{table}/feed?after={loose_integer()}",
            "loose table feed after",
            (bearer,),
            None,
            400,
        ),
        lambda: HostileRequest(
            "lobby",
            "DELETE",
            f"/tables/{table}/seats/{rng.choice(['%2B0', '0_0', '%D9%A0'])}",
            "loose seat number",
            (bearer,),
            None,
            400,
        ),
        lambda: HostileRequest(
            "match",
            "POST",
            f"/matches/{match}/actions",
            "move extra field",  # 400, or 409 first when the version is stale
            (as_json, bearer, ("Idempotency-Key", uuid.uuid4().hex.encode())),
            _json_bytes(
                {"game": "hanabi", "expected_version": 1, "action": rng.choice(loose_actions)}
            ),
        ),
    ]
    while True:
        yield rng.choice(makers)()
