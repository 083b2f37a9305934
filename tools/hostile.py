"""Traffic that tests the platform's edges, shared by ``playtable bench race|malformed`` and the
fault-injection suite (``tests/faults``), beside the load of ``tools/traffic.py``:

- ``race_round``: many clients send a move for one match at the same expected version at once.
- ``hostile_requests``: malformed requests to every lobby and match route, each of which must
  be refused with a 4xx problem document, never a 5xx.

The races use aiohttp, whose cost per request is small enough that they measure the services
rather than their client; malformed requests are written byte for byte on sockets of their own.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tools.traffic import (
    Endpoints,
    GaveUp,
    authorization,
    fetch,
    json_request,
    load_policy,
)

PROBLEM_JSON = "application/problem+json"


# --- racing writers -----------------------------------------------------------------------


@dataclass
class RaceResult:
    version: int
    statuses: list[int]
    bodies: list[Any]
    keys: int
    """How many distinct Idempotency-Keys were sent."""

    @property
    def created(self) -> int:
        return self.statuses.count(201)

    def problem_types(self) -> list[str]:
        return [
            str(body.get("type", "")).rsplit("/", 1)[-1] if isinstance(body, dict) else "?"
            for status, body in zip(self.statuses, self.bodies, strict=True)
            if status != 201
        ]


async def race_round(
    session: aiohttp.ClientSession,
    match_urls: list[str],
    match_id: str,
    tokens: list[str],
    rng: random.Random,
    *,
    clients: int = 20,
    same_key: bool = False,
    seats: list[int] | None = None,
) -> RaceResult | None:
    """``clients`` requests at one expected version, released together.

    ``seats``: who sends (client i as ``seats[i % len]``); by default one seat to move for
    all. ``same_key``: one key and body for every client (a retry storm), else each its own
    key and a random legal action. None if the match is over.
    """

    async def read(url: str, headers: dict[str, str] | None = None) -> Any:
        reply = await fetch(session, "GET", url, headers=headers)
        if reply.status != 200:
            raise GaveUp(f"GET {url}: {reply.status} {reply.text[:300]}")
        return reply.json()

    info = await read(f"{match_urls[0]}/matches/{match_id}")
    if info["status"] != "running" or not info["to_move"]:
        return None
    version = info["version"]
    senders = seats or [rng.choice(info["to_move"])]
    legal: dict[int, list[Any]] = {}
    for seat in set(senders):
        listed = await read(
            f"{match_urls[0]}/matches/{match_id}/actions", authorization(tokens[seat])
        )
        if listed["version"] != version:
            return await race_round(
                session,
                match_urls,
                match_id,
                tokens,
                rng,
                clients=clients,
                same_key=same_key,
                seats=seats,
            )
        legal[seat] = listed["actions"]
    shared_key = uuid.uuid4().hex
    shared_seat = senders[0]
    shared_action = load_policy(rng, legal[shared_seat])
    requests = []
    for index in range(clients):
        seat = shared_seat if same_key else senders[index % len(senders)]
        action = shared_action if same_key else load_policy(rng, legal[seat])
        key = shared_key if same_key else uuid.uuid4().hex
        url = f"{match_urls[index % len(match_urls)]}/matches/{match_id}/actions"
        headers = {**authorization(tokens[seat]), "Idempotency-Key": key}
        body = {"game": info["game"], "expected_version": version, "action": action}
        requests.append((url, *json_request(body, headers)))
    go = asyncio.Event()

    async def send(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
        await go.wait()
        reply = await fetch(session, "POST", url, body=body, headers=headers)
        try:
            return reply.status, reply.json()
        except ValueError:
            return reply.status, reply.text

    tasks = [asyncio.create_task(send(*request)) for request in requests]
    await asyncio.sleep(0)  # every task waits at the barrier
    go.set()
    answers = await asyncio.gather(*tasks)
    keys = 1 if same_key else clients
    return RaceResult(version, [a[0] for a in answers], [a[1] for a in answers], keys)


async def warm_connections(session: aiohttp.ClientSession, urls: list[str], count: int) -> None:
    """Open ``count`` keep-alive connections to each URL so that racing requests leave at once."""
    health = [f"{url}/health" for url in urls for _ in range(count)]
    await asyncio.gather(*(fetch(session, "GET", url) for url in health))


# --- malformed requests -------------------------------------------------------------------


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
    ]
    while True:
        yield rng.choice(makers)()


@dataclass
class BarrageAnswer:
    request: HostileRequest
    status: int
    content_type: str
    body: str

    @property
    def acceptable(self) -> bool:
        return 400 <= self.status < 500 and self.content_type.startswith(PROBLEM_JSON)


async def send_hostile(
    endpoints: Endpoints, request: HostileRequest, timeout: float = 10.0
) -> BarrageAnswer:
    """One malformed request, written byte for byte on a connection of its own: aiohttp would
    write header values as UTF-8 (``\\xff`` as two bytes) and add headers of its own. Feeds
    are closed after the headers (a refusal has a body)."""
    base = urlsplit(endpoints.lobby if request.service == "lobby" else endpoints.match())
    body = request.content or b""
    head = f"{request.method} {request.path} HTTP/1.1\r\nHost: {base.netloc}\r\n".encode()
    head += b"".join(name.encode() + b": " + value + b"\r\n" for name, value in request.headers)
    if request.content is not None or request.method == "POST":  # a GET or DELETE has none
        head += b"Content-Length: %d\r\n" % len(body)
    head += b"Connection: close\r\n\r\n"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(base.hostname, base.port)
            try:
                writer.write(head + body)
                status_line = await reader.readline()
                content_type = ""
                while (line := await reader.readline()).strip():
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-type":
                        content_type = value.strip().decode("latin-1")
                streamed = content_type.startswith("text/event-stream")
                text = "" if streamed else (await reader.read()).decode("utf-8", "replace")[:500]
            finally:
                writer.close()
    except (OSError, TimeoutError) as error:
        return BarrageAnswer(request, 0, "", f"{type(error).__name__}: {error}")
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return BarrageAnswer(request, 0, "", f"no status line: {status_line[:100]!r}")
    return BarrageAnswer(request, int(parts[1]), content_type, text)


async def barrage(
    endpoints: Endpoints,
    known: Known,
    requests: int,
    *,
    concurrency: int = 8,
    seed: int = 1,
    timeout: float = 10.0,
) -> list[BarrageAnswer]:
    """``requests`` malformed requests, ``concurrency`` at a time; every answer."""
    generator = hostile_requests(random.Random(seed), known)
    answers: list[BarrageAnswer] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            answers.append(await send_hostile(endpoints, next(generator), timeout))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answers


def summarize_barrage(answers: list[BarrageAnswer]) -> dict[str, Any]:
    by_status = Counter(answer.status for answer in answers)
    bad = [answer for answer in answers if not answer.acceptable]
    return {
        "requests": len(answers),
        "5xx": sum(count for status, count in by_status.items() if status >= 500),
        "transport_errors": by_status.get(0, 0),
        "not_4xx_problem": len(bad),
        "by_status": dict(sorted(by_status.items())),
        "labels_5xx": dict(Counter(a.request.label for a in answers if a.status >= 500)),
        "labels_not_problem": dict(Counter(a.request.label for a in bad)),
    }
