"""The request guard: bodies, queries and ids checked before a handler sees them."""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any, Literal, NamedTuple, get_args, get_origin

import msgspec
from litestar import Request
from litestar.handlers import HTTPRouteHandler
from litestar.typing import FieldDefinition

from shared.edge.errors import Problem, invalid_request
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
    if request.scope["query_string"] and any(
        "\x00" in key or "\x00" in value for key, value in request.query_params.multi_items()
    ):
        raise invalid_request("the URL holds a NUL character")
    if request.scope["query_string"] or request.path_params:  # a move has no query
        _check_parameters(request)
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
    errors = [schema_error(str(refused))]
    raise invalid_request(f"the body does not match its schema: {refused}", errors)


def action_refused(refused: str) -> Problem:
    """The 400 for a move whose action is not of its game's schema (the rules service decodes
    it, strictly, and says why in ``refused``): an unknown field, type or value."""
    return invalid_request(
        f"the action does not match its game's schema: {refused}",
        [schema_error(refused, within="action")],
    )


_UNKNOWN_FIELD = re.compile(r"Object contains unknown field `(.*)`")


def schema_error(refused: str, within: str = "") -> dict[str, Any]:
    """One item of a problem's ``errors`` for msgspec's refusal of a body (or of its part
    ``within``): what is wrong, and the dotted path of the field, an unknown one's own."""
    message, _, path = refused.partition(" - at `$")
    keys = [within, path.strip("`.")]
    if unknown := _UNKNOWN_FIELD.fullmatch(message):
        keys.append(unknown[1])
    return _body_error(message, ".".join(key for key in keys if key))


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
WHOLE_NUMBER = re.compile(r"[0-9]+")
"""An integer parameter as the contract writes it (every one is at least 0): Litestar would also
take ``1e3``, ``2.0``, ``+1``, ``1_0`` or other scripts' digits, and read them as numbers."""
BOOLEANS = ("true", "false")
"""A boolean parameter's only forms (Litestar would also take ``1``, ``0``, ``True``)."""


class Parameter(NamedTuple):
    """A query or path parameter of a route, and the exact forms its values take."""

    name: str
    """As the URL spells it."""
    source: Literal["query", "path"]
    field: FieldDefinition


@functools.cache
def route_parameters(
    handler: HTTPRouteHandler, path_names: frozenset[str]
) -> tuple[Parameter, ...]:
    """The query parameters of a handler, and its path parameters that are not text (text has
    no other form to refuse, and a move's route has only such), as Litestar sorts them."""
    model = handler.create_kwargs_model(path_parameters=dict.fromkeys(path_names))
    fields = handler.parsed_fn_signature.parameters
    return tuple(
        Parameter(definition.field_alias, source, fields[definition.field_name])
        for source, definitions in (
            ("query", model.expected_query_params),
            ("path", model.expected_path_params),
        )
        for definition in sorted(definitions, key=lambda definition: definition.field_alias)
        if source == "query" or fields[definition.field_name].annotation is not str
    )


def _check_parameters(request: Request[Any, Any, Any]) -> None:
    """Refuse a query or path parameter Litestar would quietly misread or convert: one that
    takes one value given twice (it keeps one), ``null`` for an optional one that is not text
    (it reads ``?status=null`` as no ``status``, though ``null`` is none of its values), and a
    value not in its type's one exact form (an integer in decimal digits, ``true`` or
    ``false``, an enum's value as listed, an RFC 3339 date-time with its offset)."""
    parameters = route_parameters(request.route_handler, frozenset(request.path_params))
    if not parameters:
        return
    query = request.query_params
    in_path = any(parameter.source == "path" for parameter in parameters)
    raw_path = _raw_path_params(request) if in_path else {}
    for parameter in parameters:
        if parameter.source == "path":
            values = [raw_path[parameter.name]] if parameter.name in raw_path else []
        else:
            values = query.getall(parameter.name, [])
        if not values:
            continue
        field = parameter.field
        if len(values) > 1 and not field.is_non_string_sequence:
            raise _refused(parameter, "given more than once")
        if values == ["null"] and field.is_optional and str not in field.args:
            raise _refused(parameter, "null, which is none of its values: leave it out")
        for value in values:
            if (wrong := _form_error(field, value)) is not None:
                raise _refused(parameter, wrong)


def _form_error(field: FieldDefinition, value: str) -> str | None:
    """What is wrong with the form of one value of a parameter, if anything."""
    if value == "null" and field.is_optional:
        return None  # refused above unless the parameter is text
    kinds = field.args if field.is_optional else (field.annotation,)
    if bool in kinds:
        return None if value in BOOLEANS else "not true or false"
    if int in kinds:
        return None if WHOLE_NUMBER.fullmatch(value) else "not a whole number in decimal digits"
    if datetime in kinds:
        return None if RFC3339.fullmatch(value) else "not an RFC 3339 date-time"
    choices = [choice for kind in kinds if get_origin(kind) is Literal for choice in get_args(kind)]
    if choices and value not in choices:
        return "not one of " + ", ".join(repr(choice) for choice in choices)
    return None


def _raw_path_params(request: Request[Any, Any, Any]) -> dict[str, str]:
    """The path parameters as the URL wrote them (Litestar has converted them by now: ``int``
    of ``+1``), read by lining the path up with its template segment by segment; none for a
    template with a parameter that spans segments."""
    if not request.path_params:
        return {}
    template = request.scope.get("path_template", "").strip("/").split("/")
    segments = request.scope["path"].strip("/").split("/")
    if len(template) != len(segments):
        return {}
    return {
        part[1:-1].partition(":")[0]: segment
        for part, segment in zip(template, segments, strict=True)
        if part.startswith("{") and part.endswith("}")
    }


def _refused(parameter: Parameter, message: str) -> Problem:
    """The 400 naming the parameter, where it is and what is wrong with it."""
    return invalid_request(
        f"the {parameter.source} parameter {parameter.name!r} is {message}",
        [{"message": message, "source": parameter.source, "key": parameter.name}],
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
