"""Malformed requests against the running services: each gets a 4xx problem+json (never a
500) and changes nothing; whatever the lobby accepts starts a match."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import psycopg
import pytest

from services.operator.cli import CONTRACT_PATH
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, open_table
from tools.hostile.barrage import barrage
from tools.hostile.malformed import Known
from tools.traffic import Endpoints

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]

PROBLEMS = "https://playtable.dev/problems/"
TOO_BIG = 99999999999999999999
ABOVE_INT = 2**31


@pytest.fixture(scope="module")
def match(stack: Stack) -> tuple[str, list[str]]:
    return open_table(stack, "hanabi", 2, seed=1)


@pytest.fixture(scope="module")
def open_table_id(stack: Stack) -> str:
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 3})
    assert created.status_code == 201, created.text
    return str(created.json()["table_id"])


@pytest.fixture
def unchanged(database_url: str) -> Iterator[None]:
    """The test's requests leave every event and table as they were."""

    def counts() -> tuple[Any, ...]:
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "select (select count(*) from events), (select count(*) from lobby_tables),"
                " (select count(*) from lobby_seats), (select count(*) from idempotency)"
            ).fetchone()
        assert row is not None
        return tuple(row)

    before = counts()
    yield
    assert counts() == before


def assert_problem(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == PROBLEMS + kind, problem
    return problem


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(value)).decode()


@pytest.mark.parametrize(
    "body",
    [
        b'{"game": "hanabi", "seats": 2, "options": {"deck": ' + nested(1_000) + b"}}",
        b'{"game": "hanabi", "seats": 2, "name": "a\\u0000b"}',
        b'{"game": "hanabi\\u0000", "seats": 2}',
        b'{"game": "hanabi", "seats": 2, "options": {"deck\\u0000": 1}}',
        b'{"game": "hanabi", "seats": "2"}',
        b'{"game": "hanabi", "seats": 2.5}',
        b'{"game": "hanabi", "seats": true}',
        b'{"game": "hanabi", "seats": 2, "seed": "123"}',
        b'{"game": "hanabi", "seats": 2, "seed": 99999999999999999999}',
        b'{"game": "hanabi", "seats": 2, "visibility": 1}',
        b'{"game": "hanabi", "seats": 2',
    ],
)
def test_create_table_with_a_malformed_body(stack: Stack, unchanged: None, body: bytes) -> None:
    assert_problem(stack.lobby.post("/tables", content=body), 400, "invalid-request")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"suits": 5.5}, "suits"),
        ({"suits": "5"}, "suits"),
        ({"rainbow": 1}, "rainbow"),
        ({"empty_clues": "true"}, "empty_clues"),
        ({"deck": [1.5, 2.5]}, "deck"),
        ({"deck": ["11"]}, "deck"),
    ],
)
def test_create_table_with_an_option_of_the_wrong_type(
    stack: Stack, unchanged: None, options: dict[str, Any], named: str
) -> None:
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2, "options": options})
    problem = assert_problem(created, 422, "bad-option")
    assert repr(named) in problem["detail"]


def test_an_accepted_table_starts_its_match(stack: Stack) -> None:
    match_id, tokens = open_table(stack, "hanabi", 2, options={"suits": 6, "rainbow": True})
    shown = stack.match.get(f"/matches/{match_id}", headers=auth(tokens[0])).json()
    assert len(shown["view"]["fireworks"]) == 6


@pytest.mark.parametrize(
    "path",
    [
        "/tables/a%00b",
        "/tables/a%00b/feed",
        "/tables?game=hanabi%00",
        "/tables?status=open%00",
        "/tables?cursor=%00",
        "/tables?limit=" + str(TOO_BIG),
        "/games/hanabi%00",
    ],
)
def test_lobby_reads_with_a_malformed_url(stack: Stack, path: str) -> None:
    assert_problem(stack.lobby.get(path), 400, "invalid-request")


@pytest.mark.parametrize(
    "value",
    [
        [1, 2],
        ["not a time", "0123456789abcdef0123456789abcdef"],
        ["2020-01-01T00:00:00", "0123456789abcdef0123456789abcdef"],
        ["2020-01-01T00:00:00+00:00", "a\x00"],
        ["2020-01-01T00:00:00+00:00", 5],
        {"created_at": "2020-01-01T00:00:00+00:00"},
        ["2020-01-01T00:00:00+00:00", "0123456789abcdef0123456789abcdef", "extra"],
        "2020-01-01T00:00:00+00:00",
    ],
)
def test_list_tables_with_a_forged_cursor(stack: Stack, value: Any) -> None:
    answer = stack.lobby.get("/tables", params={"cursor": cursor(value)})
    assert_problem(answer, 400, "bad-cursor")


def test_list_tables_with_a_cursor_that_is_not_base64_json(stack: Stack) -> None:
    for garbage in ["Zm9v", "!!!", base64.urlsafe_b64encode(b"\xff\xfe").decode()]:
        assert_problem(stack.lobby.get("/tables", params={"cursor": garbage}), 400, "bad-cursor")


def test_join_and_leave_with_malformed_input(
    stack: Stack, open_table_id: str, unchanged: None
) -> None:
    url = f"/tables/{open_table_id}/seats"
    for body in [
        b'{"name": "a\\u0000"}',
        b'{"name": "ada", "seat": "1"}',
        b'{"name": "ada", "seat": 99999999999999999999}',
        b'{"name": "ada", "seat": 2147483648}',
        b'{"name": "ada", "seat": -1}',
    ]:
        assert_problem(stack.lobby.post(url, content=body), 400, "invalid-request")
    assert_problem(
        stack.lobby.post("/tables/a%00b/seats", json={"name": "ada"}), 400, "invalid-request"
    )
    for seat in [TOO_BIG, ABOVE_INT, -1]:
        left = stack.lobby.delete(f"{url}/{seat}", headers=auth("nobody"))
        assert_problem(left, 400, "invalid-request")


@pytest.mark.parametrize(
    "query",
    [
        f"events?after={TOO_BIG}",
        f"events?after={ABOVE_INT}",
        "events?after=-1",
        f"events?limit={TOO_BIG}",
        f"replay?version={TOO_BIG}",
        f"replay?version={ABOVE_INT}",
        f"feed?after={TOO_BIG}",
        "events?after=1%00",
    ],
)
def test_match_reads_with_out_of_range_numbers(
    stack: Stack, match: tuple[str, list[str]], query: str
) -> None:
    match_id, _ = match
    assert_problem(stack.match.get(f"/matches/{match_id}/{query}"), 400, "invalid-request")


@pytest.mark.parametrize(
    "path", ["/matches/a%00b", "/matches/a%00b/events", "/matches/a%00b/replay?version=1"]
)
def test_match_reads_with_nul_in_the_path(stack: Stack, path: str) -> None:
    assert_problem(stack.match.get(path), 400, "invalid-request")


HANABI_MOVE = b'{"game": "hanabi", '
"""The start of a move's body on the Hanabi match (a body without its game is refused too)."""


@pytest.mark.parametrize(
    "body",
    [
        HANABI_MOVE
        + b'"expected_version": 99999999999999999999, "action": {"type": "DiscardCard"}}',
        HANABI_MOVE + b'"expected_version": 2147483648, "action": {"type": "DiscardCard"}}',
        HANABI_MOVE + b'"expected_version": "1", "action": {"type": "DiscardCard", "card": 0}}',
        HANABI_MOVE + b'"expected_version": 1.5, "action": {"type": "DiscardCard", "card": 0}}',
        HANABI_MOVE
        + b'"expected_version": 1, "action": {"type": "DiscardCard\\u0000", "card": 0}}',
        b'{"game": "hanabi\\u0000", "expected_version": 1, "action": {"type": "PassTurn"}}',
        b'{"game": 5, "expected_version": 1, "action": {"type": "DiscardCard", "card": 0}}',
        b'{"expected_version": 1, "action": {"type": "DiscardCard", "card": 0}}',
        HANABI_MOVE
        + b'"expected_version": 1, "action": {"type": "DiscardCard", "card": 0, "x": '
        + nested(1_000)
        + b"}}",
    ],
)
def test_submit_action_with_a_malformed_body(
    stack: Stack, match: tuple[str, list[str]], unchanged: None, body: bytes
) -> None:
    match_id, tokens = match
    version = stack.match.get(f"/matches/{match_id}").json()["version"]
    answer = stack.match.post(
        f"/matches/{match_id}/actions",
        content=body,
        headers={**auth(tokens[0]), "Idempotency-Key": "malformed-1"},
    )
    assert_problem(answer, 400, "invalid-request")
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == version


def test_import_with_nul_or_deep_nesting(stack: Stack, unchanged: None) -> None:
    for body in [
        b'{"document": {"format": "playtable-match", "game": "hanabi\\u0000"}}',
        b'{"document": {"actions": ' + nested(5_000) + b"}}",
        b'{"document": [], "game": "hanabi"}',
    ]:
        imported = stack.match.post("/matches/import", content=body)
        assert_problem(imported, 400, "invalid-request")


LOOSE_FORMS = {
    ("query", "integer"): ["1e3", "2.0", "%2B1", "1_0"],
    ("path", "integer"): ["+1", "1_0", "%D9%A1"],
    ("query", "boolean"): ["1", "True"],
}
"""Forms Litestar (and msgspec, converting leniently) would read as numbers or booleans."""


def loose_parameters() -> Iterator[tuple[str, str, str, str]]:
    """(method, path template, parameter, loose value) for every integer and boolean query and
    path parameter of the lobby's and the match service's operations in the contract: a route
    added later is attacked too (the webhooks API, not in this stack, has its unit test)."""
    contract = json.loads(CONTRACT_PATH.read_text())
    for template, operations in contract["paths"].items():
        if template.startswith("/webhooks"):
            continue
        for method, operation in operations.items():
            if not isinstance(operation, dict):  # the path's own parameters: in each operation
                continue
            for parameter in operation.get("parameters", []):
                kind = (parameter["in"], parameter["schema"].get("type"))
                for loose in LOOSE_FORMS.get(kind, []):
                    yield method.upper(), template, parameter["name"], loose


def test_the_contract_has_loose_forms_to_try() -> None:
    assert {name for _, _, name, _ in loose_parameters()} >= {"after", "limit", "seat", "full"}


@pytest.mark.parametrize(("method", "template", "name", "loose"), list(loose_parameters()))
def test_a_parameter_not_in_its_exact_form_is_refused_naming_it(
    stack: Stack,
    match: tuple[str, list[str]],
    open_table_id: str,
    unchanged: None,
    method: str,
    template: str,
    name: str,
    loose: str,
) -> None:
    """Every other part of the request is valid: the loose parameter alone is refused, before
    anything changes (leaving seat 1, re-seating it)."""
    match_id, tokens = match
    known = {"match_id": match_id, "table_id": open_table_id, "seat": "1", "game": "hanabi"}
    in_path = {key: (loose if key == name else value) for key, value in known.items()}
    path = template.format(**{key: in_path[key] for key in known if f"{{{key}}}" in template})
    query = {"version": "1", name: loose} if template.endswith("/replay") else {name: loose}
    if f"{{{name}}}" not in template:
        path += "?" + "&".join(f"{key}={value}" for key, value in query.items())
    client = stack.lobby if not template.startswith("/matches") else stack.match
    answer = client.request(method, path, headers=auth(tokens[0]))
    problem = assert_problem(answer, 400, "invalid-request")
    source = "path" if f"{{{name}}}" in template else "query"
    assert [(error["source"], error["key"]) for error in problem["errors"]] == [(source, name)]
    assert f"{source} parameter {name!r}" in problem["detail"]


@pytest.mark.parametrize(
    ("action", "key"),
    [
        ({"type": "PlayCard", "card": 0, "extra": 1}, "action.extra"),
        ({"type": "PlayCard", "card": "0"}, "action.card"),
        ({"type": "PlayCard", "card": 0, "seat": 1}, "action.seat"),
        ({"type": "Fly"}, "action.type"),
    ],
)
def test_an_action_not_of_its_games_schema_is_refused_naming_the_field(
    stack: Stack,
    match: tuple[str, list[str]],
    unchanged: None,
    action: dict[str, Any],
    key: str,
) -> None:
    match_id, tokens = match
    version = stack.match.get(f"/matches/{match_id}").json()["version"]
    move = {"game": "hanabi", "expected_version": version, "action": action}
    answer = stack.match.post(
        f"/matches/{match_id}/actions",
        json=move,
        headers={**auth(tokens[0]), "Idempotency-Key": f"loose-{key}"},
    )
    problem = assert_problem(answer, 400, "invalid-request")
    assert [error["key"] for error in problem["errors"]] == [key]
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == version


def test_a_body_with_a_field_it_does_not_have_is_refused_naming_it(
    stack: Stack, open_table_id: str, unchanged: None
) -> None:
    for path, body in [
        ("/tables", {"game": "hanabi", "seats": 2, "extra": 1}),
        (f"/tables/{open_table_id}/seats", {"name": "ada", "extra": 1}),
    ]:
        problem = assert_problem(stack.lobby.post(path, json=body), 400, "invalid-request")
        assert [error["key"] for error in problem["errors"]] == ["extra"]


def test_the_hostile_barrage_is_refused_and_its_loose_forms_with_400(
    stack: Stack, match: tuple[str, list[str]], open_table_id: str
) -> None:
    """The fault suite's barrage (``tools/hostile``), shortly, on this stack: every answer a 4xx
    problem, those that only a 400 fits (a parameter in a loose form) a 400."""
    match_id, tokens = match
    version = stack.match.get(f"/matches/{match_id}").json()["version"]
    endpoints = Endpoints(str(stack.lobby.base_url), [str(stack.match.base_url)])
    known = Known(table_id=open_table_id, match_id=match_id, token=tokens[0])
    answers = asyncio.run(barrage(endpoints, known, 300, seed=35))
    wrong = [
        f"{a.request.label}: {a.request.method} {a.request.path[:100]} -> {a.status} {a.body}"
        for a in answers
        if not a.acceptable
    ]
    assert not wrong, "\n".join(wrong[:20])
    assert sum(a.request.refused_with == 400 for a in answers) > 20
    assert stack.match.get(f"/matches/{match_id}").json()["version"] == version
