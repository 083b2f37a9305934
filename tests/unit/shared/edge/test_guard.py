"""The request guard and error mapping every public service gets from ``service_app``:
malformed requests are 400 problems, a backing service that is down is a 503 with Retry-After,
never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
import psycopg
import pytest
import redis.exceptions
from hypothesis import given, settings
from hypothesis import strategies as st
from litestar import get, post
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from services.lobby.app import create_app as lobby_app
from services.match.app import create_app as match_app
from services.webhooks.app import create_app as webhooks_app
from shared.edge.app import service_app
from shared.edge.errors import EXCEPTION_HANDLERS, Problem
from shared.edge.guard import (
    MAX_JSON_DEPTH,
    _checked_body,
    _form_error,
    _plainly_exact,
    check_request,
    route_parameters,
)
from shared.infra.settings import Settings

PROBLEMS = "https://playtable.dev/problems/"


class Body(msgspec.Struct, forbid_unknown_fields=True):
    count: Annotated[int, msgspec.Meta(ge=0)]
    flag: bool = False
    tags: list[str] = []
    extra: dict[str, Any] = {}


@post("/echo", sync_to_thread=False)
def echo(data: JSONBody[Body]) -> Body:
    return data


@get("/things/{name:str}", sync_to_thread=False)
def thing(name: FromPath[str]) -> str:
    return name


@get("/seats/{seat:int}", sync_to_thread=False)
def seat_query(
    seat: FromPath[int],
    after: Annotated[int, QueryParameter(ge=0)] = 0,
    full: FromQuery[bool] = False,
    status: FromQuery[Literal["open", "closed"] | None] = None,
    since: FromQuery[datetime | None] = None,
) -> dict[str, Any]:
    return {"seat": seat, "after": after, "full": full, "status": status}


FAILURES: dict[str, Exception] = {
    "postgres-down": psycopg.OperationalError("connection refused"),
    "redis-down": redis.exceptions.ConnectionError("Error 111 connecting"),
    "redis-slow": redis.exceptions.TimeoutError("Timeout reading"),
    "postgres-refuses-value": psycopg.errors.NumericValueOutOfRange("integer out of range"),
}


@get("/fail/{kind:str}", sync_to_thread=False)
def fail(kind: FromPath[str]) -> None:
    raise FAILURES[kind]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient[Any]]:
    app = service_app(
        "test", "test-1", [echo, thing, seat_query, fail], {}, on_startup=[], on_shutdown=[]
    )
    with TestClient(app) as test_client:
        yield test_client


def assert_problem(response: Any, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == PROBLEMS + kind and problem["status"] == status
    assert "Traceback" not in response.text
    return problem


@pytest.mark.parametrize(
    "body",
    [
        b'{"count": "2"}',
        b'{"count": 2.5}',
        b'{"count": 2, "flag": 1}',
        b'{"count": 2, "flag": "true"}',
        b'{"count": 2, "tags": [1]}',
        b'{"count": -1}',
        b'{"count": 2, "other": 1}',
        b'{"count": 2',
        b"[]",
    ],
)
def test_a_body_not_exactly_of_its_schema_is_a_400(client: TestClient[Any], body: bytes) -> None:
    assert_problem(client.post("/echo", content=body), 400, "invalid-request")


def test_the_schema_error_names_the_field(client: TestClient[Any]) -> None:
    problem = assert_problem(
        client.post("/echo", content=b'{"count": "2"}'), 400, "invalid-request"
    )
    assert problem["errors"] == [
        {"message": "Expected `int`, got `str`", "source": "body", "key": "count"}
    ]


def test_a_whole_number_written_as_a_float_is_the_integer(client: TestClient[Any]) -> None:
    """JSON Schema's ``integer`` admits ``2.0``; the handler gets 2."""
    echoed = client.post("/echo", content=b'{"count": 2.0, "tags": ["a"]}')
    assert echoed.status_code == 201, echoed.text
    assert echoed.content.startswith(b'{"count":2,')


def test_a_valid_body_passes(client: TestClient[Any]) -> None:
    deep = {"a": 1}
    for _ in range(MAX_JSON_DEPTH - 3):
        deep = {"a": deep}
    body = {"count": 2, "flag": True, "tags": ["x"], "extra": deep}
    answer = client.post("/echo", json=body)
    assert answer.status_code == 201 and answer.json() == body


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_a_body_nested_too_deep_is_a_400(client: TestClient[Any], depth: int) -> None:
    body = b'{"count": 1, "extra": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
    problem = assert_problem(client.post("/echo", content=body), 400, "invalid-request")
    assert str(MAX_JSON_DEPTH) in problem["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {"count": 1, "tags": ["a\x00b"]},
        {"count": 1, "extra": {"k\x00": 1}},
        {"count": 1, "extra": {"k": [{"deeper": "\x00"}]}},
    ],
)
def test_nul_anywhere_in_the_body_is_a_400(client: TestClient[Any], body: Any) -> None:
    problem = assert_problem(client.post("/echo", json=body), 400, "invalid-request")
    assert "NUL" in problem["detail"]


def test_a_backslash_u0000_text_is_not_a_nul(client: TestClient[Any]) -> None:
    answer = client.post("/echo", json={"count": 1, "tags": ["\\u0000"]})
    assert answer.status_code == 201 and answer.json()["tags"] == ["\\u0000"]


@post("/echo-decoded", sync_to_thread=False)
def echo_decoded(data: JSONBody[Body]) -> dict[str, bool]:
    return {"decoded_once": isinstance(data, Body)}


def test_the_handler_gets_the_body_the_guard_decoded(client: TestClient[Any]) -> None:
    """Litestar takes the body from the connection's state rather than decoding it again."""
    app = service_app("test", "test-1", [echo_decoded], {}, on_startup=[], on_shutdown=[])
    seen: list[Any] = []
    original = msgspec.json.decode

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("type"))
        return original(*args, **kwargs)

    with TestClient(app) as test_client, pytest.MonkeyPatch.context() as patched:
        patched.setattr(msgspec.json, "decode", counting)
        answer = test_client.post("/echo-decoded", json={"count": 2, "extra": {"a": [1]}})
    assert answer.status_code == 201 and answer.json() == {"decoded_once": True}
    assert seen == [Body]  # one strict decode, into the handler's type


def _verdict(body: bytes) -> tuple[str, Any]:
    """What the full check makes of a body: its value, or its refusal's detail and errors."""
    try:
        return "passed", _checked_body(None, body, Body)  # type: ignore[arg-type]
    except Problem as refused:
        return "refused", (refused.detail, refused.errors)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([2.0, -0.0, 1e300])
    | st.lists(st.sampled_from(["a", "\x00", "\\", "u0000", "[", "{"]), max_size=4).map("".join),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=20,
)
BODIES = st.fixed_dictionaries(
    {"count": st.integers(-2, 3) | st.floats(0, 3) | st.text(max_size=1)},
    optional={"flag": st.booleans() | st.integers(0, 1), "tags": JSON_VALUES, "extra": JSON_VALUES},
)


@settings(max_examples=500, deadline=None)
@given(BODIES, st.booleans())
def test_the_one_pass_decode_agrees_with_the_full_check(body: dict[str, Any], nest: bool) -> None:
    """A body the strict decode alone lets through is one the full check passes, with the
    same value: every other body goes the full check's way, and is answered as before."""
    encoded = msgspec.json.encode({"count": 1, "extra": body} if nest else body)
    quick = _plainly_exact(encoded, Body)
    if quick is not None:
        assert _verdict(encoded) == ("passed", quick)


@pytest.mark.parametrize("depth", range(MAX_JSON_DEPTH - 4, MAX_JSON_DEPTH + 3))
def test_depths_near_the_limit_are_answered_as_by_the_full_check(depth: int) -> None:
    extra = b'{"a": ' + b"[" * depth + b"1" + b"]" * depth + b"}"
    encoded = b'{"count": 1, "extra": ' + extra + b"}"
    quick = _plainly_exact(encoded, Body)
    assert quick is None or _verdict(encoded) == ("passed", quick)


@pytest.mark.parametrize("url", ["/things/a%00b", "/things/ok?x=%00", "/things/ok?%00=1"])
def test_nul_in_the_url_is_a_400(client: TestClient[Any], url: str) -> None:
    assert_problem(client.get(url), 400, "invalid-request")


LOOSE_INTEGERS = ["1e3", "2.0", "+1", "%2B1", "-0", "1_0", "%D9%A5", "%201", "0x1", ""]
"""Integers Litestar would read as numbers (or default), but not in decimal digits."""


@pytest.mark.parametrize(
    ("url", "source", "name"),
    [
        *((f"/seats/1?after={loose}", "query", "after") for loose in LOOSE_INTEGERS),
        *((f"/seats/{loose}", "path", "seat") for loose in ["+1", "%D9%A5", "1_0", "-0"]),
        *((f"/seats/1?full={loose}", "query", "full") for loose in ["1", "True", "0", "yes"]),
        ("/seats/1?status=Open", "query", "status"),
        ("/seats/1?status=open%20", "query", "status"),
        ("/seats/1?status=null", "query", "status"),
        ("/seats/1?after=1&after=2", "query", "after"),
        ("/seats/1?since=1700000000", "query", "since"),
        ("/seats/1?since=2020-01-01T00:00:00", "query", "since"),
    ],
)
def test_a_parameter_not_in_its_exact_form_is_a_400_naming_it(
    client: TestClient[Any], url: str, source: str, name: str
) -> None:
    problem = assert_problem(client.get(url), 400, "invalid-request")
    assert f"the {source} parameter {name!r} is " in problem["detail"]
    assert [(error["source"], error["key"]) for error in problem["errors"]] == [(source, name)]


def test_parameters_in_their_exact_form_pass(client: TestClient[Any]) -> None:
    url = "/seats/07?after=12&full=true&status=closed&since=2020-01-01T00:00:00Z"
    answer = client.get(url)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"seat": 7, "after": 12, "full": True, "status": "closed"}


@pytest.mark.parametrize("create_app", [lobby_app, match_app, webhooks_app])
def test_every_number_and_flag_of_every_route_is_read_strictly(create_app: Any) -> None:
    """The guard finds each route's parameters itself, so a route added later is covered."""
    checked: list[str] = []
    for route in create_app(Settings.from_env()).routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            for parameter in route_parameters(handler, frozenset(route.path_parameters)):
                loose = _form_error(parameter.field, "1e3")
                if int in (parameter.field.annotation, *parameter.field.args):
                    assert loose is not None and _form_error(parameter.field, "12") is None
                    checked.append(parameter.name)
                if bool in (parameter.field.annotation, *parameter.field.args):
                    assert loose is not None and _form_error(parameter.field, "true") is None
                    checked.append(parameter.name)
    assert checked


@pytest.mark.parametrize("kind", ["postgres-down", "redis-down", "redis-slow"])
def test_a_backing_service_down_is_a_503_with_retry_after(
    client: TestClient[Any], kind: str
) -> None:
    response = client.get(f"/fail/{kind}")
    problem = assert_problem(response, 503, "service-unavailable")
    assert int(response.headers["retry-after"]) > 0
    assert "refused" not in problem["detail"] and "Error" not in problem["detail"]


def test_a_value_postgres_refuses_is_a_400(client: TestClient[Any]) -> None:
    problem = assert_problem(client.get("/fail/postgres-refuses-value"), 400, "invalid-request")
    assert "integer" not in problem["detail"]


@pytest.mark.parametrize("create_app", [lobby_app, match_app, webhooks_app])
def test_every_service_has_the_guard_and_the_handlers(create_app: Any) -> None:
    app = create_app(Settings.from_env())
    assert app.before_request is check_request
    assert {kind: app.exception_handlers.get(kind) for kind in EXCEPTION_HANDLERS} == (
        EXCEPTION_HANDLERS
    )
