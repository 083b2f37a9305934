"""The request guard: bodies, queries and ids checked before a handler sees them."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import msgspec
from litestar import Request

from shared.edge.errors import invalid_request
from shared.infra.logs import bind

PG_INT_MAX = 2**31 - 1
"""The largest Postgres ``int`` (versions, seats): larger numbers are refused at the edge."""
PG_BIGINT_MAX = 2**63 - 1
"""The largest Postgres ``bigint`` (seeds, delivery ids)."""
MAX_JSON_DEPTH = 64
"""Deeper request bodies are refused before anything recurses over them."""
_LOGGED_IDS = frozenset({"match_id", "table_id", "subscription_id"})
"""Path parameters every log line of the request carries."""


async def check_request(request: Request[Any, Any, Any]) -> None:
    """Refuse what would otherwise fail deep inside with a 500: NUL in the path or the query
    (Postgres text cannot hold it), and a JSON body that is too deep, holds NUL or does not
    match its schema exactly (Litestar converts bodies leniently: ``"2"`` would pass as 2)."""
    bind(**{name: value for name, value in request.path_params.items() if name in _LOGGED_IDS})
    if "\x00" in request.scope["path"]:
        raise invalid_request("the URL holds a NUL character")
    if request.scope["query_string"]:  # none (a move's): nothing of the query to refuse
        if any(
            "\x00" in key or "\x00" in value for key, value in request.query_params.multi_items()
        ):
            raise invalid_request("the URL holds a NUL character")
        _check_query(request)
    body_field = request.route_handler.parsed_fn_signature.parameters.get("data")
    if body_field is None:
        return
    body = await request.body()
    if not body:
        if body_field.has_default:
            return
        raise invalid_request("the request needs a JSON body", [_body_error("the body is empty")])
    data = _plainly_exact(body, body_field.annotation)
    if data is None:
        data = _checked_body(request, body, body_field.annotation)
    _decoded(request, data)


def _plainly_exact(body: bytes, annotation: Any) -> Any:
    """The body decoded strictly in one pass, when that alone decides (the common case): it
    has fewer brackets than ``MAX_JSON_DEPTH`` (so it nests no deeper) and no escaped NUL (a
    raw NUL is no JSON), which leaves nothing for ``_checked_body`` to refuse. None: let
    ``_checked_body`` decide, and word its refusal."""
    if b"\\u0000" in body or body.count(b"[") + body.count(b"{") >= MAX_JSON_DEPTH:
        return None
    try:
        return msgspec.json.decode(body, type=annotation, strict=True)
    except (msgspec.DecodeError, RecursionError):  # a ValidationError is a DecodeError
        return None


def _checked_body(request: Request[Any, Any, Any], body: bytes, annotation: Any) -> Any:
    """The body decoded strictly, or the 400 that says what is wrong with it: not JSON, too
    deep, a NUL, or not of its schema. A whole number written ``2.0`` passes as 2."""
    try:
        document = msgspec.json.decode(body)
    except msgspec.DecodeError as error:
        raise invalid_request(f"the body is not JSON: {error}") from None
    except RecursionError:
        raise invalid_request(f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
    _check_document(document)
    try:
        return msgspec.json.decode(body, type=annotation, strict=True)
    except msgspec.ValidationError as error:
        refused = error
    exact, changed = _whole_numbers(document)
    if changed:  # ``2.0`` for an integer: valid once it is 2
        try:
            data = msgspec.convert(exact, annotation, strict=True)
        except msgspec.ValidationError as error:
            refused = error
        else:
            _replace_body(request, msgspec.json.encode(exact))
            return data
    message, _, path = str(refused).partition(" - at `$")
    errors = [_body_error(message, path.strip("`."))]
    raise invalid_request(f"the body does not match its schema: {refused}", errors)


def _decoded(request: Request[Any, Any, Any], data: Any) -> None:
    """Hand the handler ``data`` as decoded here: Litestar takes a body's JSON from the
    connection's state when it is there (and ``data`` is already of the handler's type, which
    its conversion passes through), instead of decoding the body once more."""
    request._json = data  # noqa: SLF001
    request._connection_state.json = data  # noqa: SLF001


def _replace_body(request: Request[Any, Any, Any], body: bytes) -> None:
    """The handler reads ``body`` instead (game data passes on to the rules as it came, and
    they decode it strictly). Litestar keeps the body read once in the connection state."""
    request._body = body  # noqa: SLF001
    request._connection_state.body = body  # noqa: SLF001


def _body_error(message: str, key: str = "") -> dict[str, Any]:
    """One item of a problem's ``errors``: what is wrong, where in the body."""
    return {"message": message, "source": "body", **({"key": key} if key else {})}


RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
"""An RFC 3339 date-time (with its offset: a server's time zone must not decide what it means)."""


def _check_query(request: Request[Any, Any, Any]) -> None:
    """Refuse what Litestar would quietly misread: a parameter that takes one value given
    twice (it keeps one), ``null`` for an optional one that is not text (it reads
    ``?status=null`` as no ``status``, though ``null`` is none of its values), and a date-time
    that is not RFC 3339 (it takes a bare number as Unix time, and one without offset)."""
    given = request.query_params
    for field in request.route_handler.parsed_fn_signature.parameters.values():
        name = getattr(field.kwarg_definition, "query", None) or field.name
        values = given.getall(name, [])
        if datetime in (field.annotation, *field.args) and values and values != ["null"]:
            if not RFC3339.fullmatch(values[0]):
                raise invalid_request(
                    f"the query parameter {name!r} is not an RFC 3339 date-time",
                    [{"message": "not an RFC 3339 date-time", "source": "query", "key": name}],
                )
        if len(values) > 1 and not field.is_non_string_sequence:
            raise invalid_request(
                f"the query parameter {name!r} is given more than once",
                [{"message": "given more than once", "source": "query", "key": name}],
            )
        if values == ["null"] and field.is_optional and str not in field.args:
            raise invalid_request(
                f"the query parameter {name!r} cannot be null: leave it out",
                [{"message": "null is not one of its values", "source": "query", "key": name}],
            )


def _whole_numbers(value: Any) -> tuple[Any, bool]:
    """``value`` with each float that is a whole number (``2.0``) an int, and whether there
    was one (they compare equal): JSON Schema's ``integer`` admits them, so the contract does
    (``"2"`` stays refused)."""
    if isinstance(value, float) and value.is_integer():
        return int(value), True
    if isinstance(value, dict):
        pairs = {key: _whole_numbers(item) for key, item in value.items()}
        return {key: item for key, (item, _) in pairs.items()}, any(
            changed for _, changed in pairs.values()
        )
    if isinstance(value, list):
        items = [_whole_numbers(item) for item in value]
        return [item for item, _ in items], any(changed for _, changed in items)
    return value, False


def _check_document(document: Any) -> None:
    """Walk a decoded JSON document (without recursing): bounded depth, no NUL in any string."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise invalid_request(f"the body nests deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            pending.extend((key, depth) for key in value)
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
        elif isinstance(value, str) and "\x00" in value:
            raise invalid_request("a string in the body holds a NUL character")
