"""HTTP pieces both public services share: RFC 9457 problems, tokens, health, the contract."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, cast

import msgspec
import psycopg
import redis.exceptions
from litestar import Litestar, Request, Response, get
from litestar.datastructures import ResponseHeader
from litestar.di import Provide
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, Reference, Schema, SecurityScheme
from litestar.openapi.spec.enums import OpenAPIFormat, OpenAPIType
from litestar.params import HeaderParameter, PathParameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.routes import HTTPRoute
from litestar.static_files import create_static_files_router
from litestar.typing import FieldDefinition
from swagger_ui_bundle import swagger_ui_path

from shared import tracing
from shared.collector import tune_collector
from shared.logs import bind, log_context
from shared.messages import MAX_SEATS, new_id
from shared.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from shared.metrics import HttpMetrics, Metrics, process_ended
from shared.settings import Settings

if TYPE_CHECKING:
    from shared.ratelimit import RateLimiter

log = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"

SeatInPath = Annotated[int, PathParameter(ge=0, le=MAX_SEATS - 1)]
"""A seat's number in a path: one a table can have (whether this one has it is its state)."""

IDEMPOTENCY_KEY_MAX = 255
IdempotencyKey = Annotated[
    str | None,
    HeaderParameter(
        name="Idempotency-Key",
        required=False,
        min_length=1,
        max_length=IDEMPOTENCY_KEY_MAX,
        description=(
            "Retrying with the same key returns the first answer and changes nothing twice;"
            " the repeated answer says `Idempotent-Replayed: true`"
        ),
    ),
]
"""The header every state-changing POST accepts."""
REPLAYED_HEADER = "Idempotent-Replayed"
IDEMPOTENT_ANSWER_HEADERS = [
    ResponseHeader(
        name=REPLAYED_HEADER,
        description=(
            "`true` on an answer that repeats the first one to the same Idempotency-Key (nothing"
            " was done this time); absent on a first answer"
        ),
        documentation_only=True,
    )
]
"""Route arguments documenting ``json_answer``'s header on the operations that take an
Idempotency-Key."""


def json_answer(body: bytes, status: int, *, replayed: bool) -> Response[Any]:
    """A JSON answer (already encoded) to a request that may have been a retry."""
    headers = {REPLAYED_HEADER: "true"} if replayed else None
    return Response(
        content=body, status_code=status, media_type="application/json", headers=headers
    )


PROBLEM_TYPE_BASE = "https://playtable.dev/problems/"

PG_INT_MAX = 2**31 - 1
"""The largest Postgres ``int`` (versions, seats): larger numbers are refused at the edge."""
PG_BIGINT_MAX = 2**63 - 1
"""The largest Postgres ``bigint`` (seeds, delivery ids)."""
MAX_JSON_DEPTH = 64
"""Deeper request bodies are refused before anything recurses over them."""
RETRY_AFTER_S = 2
"""What a 503 asks clients to wait: long enough for a pool to reconnect."""


class ProblemDocument(msgspec.Struct, omit_defaults=True):
    """An RFC 9457 problem: ``type`` is stable per kind of error, ``detail`` explains this one."""

    type: Annotated[
        str,
        msgspec.Meta(
            description="Stable per kind of error: one of the URIs the contract lists, with"
            " status, title and meaning, in `x-problem-types`"
        ),
    ]
    title: str
    status: int
    detail: str = ""
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class Problem(Exception):
    """Raised by handlers; becomes a problem+json response and changes nothing."""

    def __init__(
        self,
        status: int,
        code: str,
        title: str,
        detail: str = "",
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail or title)
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.headers = headers
        self.errors = errors

    def document(self, instance: str | None = None) -> ProblemDocument:
        return ProblemDocument(
            type=PROBLEM_TYPE_BASE + self.code,
            title=self.title,
            status=self.status,
            detail=self.detail,
            instance=instance,
            errors=self.errors,
        )


def not_found(what: str, ident: str) -> Problem:
    return Problem(
        404, f"{what}-not-found", f"{what.capitalize()} not found", f"no {what} {ident!r}"
    )


def _respond(request: Request[Any, Any, Any], problem: Problem) -> Response[ProblemDocument]:
    headers = problem.headers
    if problem.status == 503:
        headers = {"Retry-After": str(RETRY_AFTER_S), **(headers or {})}
    if problem.status == 401:
        headers = {"WWW-Authenticate": _challenges(request, problem), **(headers or {})}
    return Response(
        problem.document(instance=request.url.path),
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


BEARER_CHALLENGE = 'Bearer realm="playtable"'
API_KEY_CHALLENGE = 'ApiKey header="X-API-Key"'
CHALLENGES = {
    "seatToken": BEARER_CHALLENGE,
    "invitationToken": BEARER_CHALLENGE,
    "appKey": API_KEY_CHALLENGE,
    "operatorKey": API_KEY_CHALLENGE,
}
"""The ``WWW-Authenticate`` challenge (RFC 9110 §11.6.1) of each security scheme: seat tokens
and invitations are bearer tokens, API keys go in their own header (a scheme of our own)."""
_KEY_PROBLEMS = frozenset({"api-key-required", "unknown-api-key"})


def challenges_of(security: list[dict[str, Any]] | None) -> list[str]:
    """The challenges of the credentials an operation takes, in its security's order."""
    named = [CHALLENGES[scheme] for way in security or [] for scheme in way]
    return list(dict.fromkeys(named))


def _challenges(request: Request[Any, Any, Any], problem: Problem) -> str:
    """What a 401 asks for: every credential the route takes, else what the problem names."""
    handler = request.scope.get("route_handler")
    named = challenges_of(handler.resolve_security() if handler is not None else None)
    if not named:
        named = [API_KEY_CHALLENGE if problem.code in _KEY_PROBLEMS else BEARER_CHALLENGE]
    return ", ".join(named)


def invalid_request(detail: str, errors: list[dict[str, Any]] | None = None) -> Problem:
    return Problem(400, "invalid-request", "The request is not valid", detail, errors=errors)


_STATUS_CODES = {
    400: ("bad-request", "Bad request"),
    401: ("unauthorized", "Unauthorized"),
    403: ("forbidden", "Forbidden"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    409: ("conflict", "Conflict"),
    413: ("payload-too-large", "Payload too large"),
    415: ("unsupported-media-type", "Unsupported media type"),
    429: ("too-many-requests", "Too many requests"),
}


_OTHER_STATUS = ("http-error", "HTTP error")


def _http_exception(
    request: Request[Any, Any, Any], exc: HTTPException
) -> Response[ProblemDocument]:
    code, title = _STATUS_CODES.get(exc.status_code, _OTHER_STATUS)
    errors = None
    if isinstance(exc, ValidationException):
        code, title = "invalid-request", "The request is not valid"
        extra = exc.extra if isinstance(exc.extra, list) else None
        errors = [dict(item) for item in extra] if extra else None
    detail = exc.detail if exc.detail and exc.detail != title else ""
    headers = dict(exc.headers or {})
    if "allow" in headers:
        headers["allow"] = _allowed(headers["allow"])
    problem = Problem(exc.status_code, code, title, detail, headers=headers or None, errors=errors)
    return _respond(request, problem)


def _allowed(allow: str) -> str:
    """The methods a 405 names: HEAD wherever GET is (``ServiceApp`` answers it)."""
    methods = [method.strip() for method in allow.split(",") if method.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.append("HEAD")
    return ", ".join(sorted(methods))


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[ProblemDocument]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    problem = Problem(500, "internal-error", "Internal server error", "the error has been logged")
    return _respond(request, problem)


def _unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[ProblemDocument]:
    """Postgres or Redis is down or overloaded: worth retrying, and nothing for the client to
    fix, so the answer names no internals."""
    log.warning("backing service unavailable on %s %s: %r", request.method, request.url.path, exc)
    problem = Problem(
        503, "service-unavailable", "Service unavailable", "a backing service did not answer"
    )
    return _respond(request, problem)


def _refused_by_postgres(
    request: Request[Any, Any, Any], exc: psycopg.DataError
) -> Response[ProblemDocument]:
    """A value Postgres cannot store (out of range, not valid text) came from the request."""
    log.warning("data refused by Postgres on %s %s: %s", request.method, request.url.path, exc)
    problem = invalid_request("a value is out of range or is not storable text")
    return _respond(request, problem)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    Problem: _respond,
    HTTPException: _http_exception,
    psycopg.OperationalError: _unavailable,  # includes psycopg_pool.PoolTimeout
    redis.exceptions.ConnectionError: _unavailable,
    redis.exceptions.TimeoutError: _unavailable,
    psycopg.DataError: _refused_by_postgres,
    Exception: _unexpected,
}


# --- request guard ---------------------------------------------------------------------------


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


COMPONENT_REF = "#/components/schemas/{name}"
"""Where the contract keeps every named schema (msgspec's ``ref_template``)."""


def component_ref(name: str) -> str:
    return COMPONENT_REF.format(name=name)


def documented_as(component: str) -> msgspec.Meta:
    """Annotation metadata for game data the services pass through as raw JSON, never
    decoding it: the contract documents it with this component, built from the games' Structs
    (``tools/contract.py``), so the services need no game code."""
    return msgspec.Meta(extra_json_schema={"$ref": component_ref(component)})


Timestamp = Annotated[
    str,
    msgspec.Meta(extra_json_schema={"format": "date-time"}),
]
"""A moment as the API shows it: an RFC 3339 date-time with its offset (``shared.db.iso``)."""


def _extra_schema(field: FieldDefinition) -> dict[str, Any]:
    for meta in field.metadata:
        if isinstance(meta, msgspec.Meta) and meta.extra_json_schema:
            return meta.extra_json_schema
    return {}


class DocumentedAsPlugin(OpenAPISchemaPlugin):
    """Litestar ignores msgspec's ``extra_json_schema``; this makes ``documented_as`` fields
    references to the component, and a ``Timestamp`` a ``date-time``."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return bool(_extra_schema(field_definition).keys() & {"$ref", "format"})

    def to_openapi_schema(  # type: ignore[override]
        self, field_definition: FieldDefinition, schema_creator: Any
    ) -> Reference | Schema:
        extra = _extra_schema(field_definition)
        if "$ref" in extra:
            return Reference(ref=cast(str, extra["$ref"]))
        return Schema(type=OpenAPIType.STRING, format=OpenAPIFormat(extra["format"]))


def problem_content() -> dict[str, Any]:
    return {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": component_ref("ProblemDocument")}}}


def add_components(schema: dict[str, Any], types: list[Any]) -> None:
    """Add the named schemas of msgspec ``types`` (and of what they refer to) to the contract."""
    _, named = msgspec.json.schema_components(types, ref_template=COMPONENT_REF)
    schema.setdefault("components", {}).setdefault("schemas", {}).update(named)


RATE_LIMITED = "Too many requests from this client (`rate-limited`): retry after `Retry-After`"


def rate_limit_headers(*, limited: bool = False) -> dict[str, Any]:
    """What the rate limiter (``shared/ratelimit.py``) adds to every answer of a public
    operation (while it runs: a deployment may turn it off), and to its 429 ``Retry-After``."""
    headers: dict[str, Any] = {
        "RateLimit-Policy": {
            "description": "The limit of this kind of request (read, write, feed) per client, as"
            ' draft-ietf-httpapi-ratelimit-headers has it: `"write";q=20;w=1` is a bucket of 20'
            " requests that refills in 1 s",
        },
        "RateLimit": {
            "description": 'What is left of it: `"write";r=0;t=1` is no request left, the'
            " bucket full again in 1 s",
        },
    }
    if limited:
        headers["Retry-After"] = {
            "description": "Whole seconds until the client may send a request of this kind again",
            "schema": {"type": "integer", "minimum": 1},
        }
    return headers


NOT_MODIFIED_HEADERS = ("ETag", "Cache-Control", "Vary")
"""What a 304 sends as its 200 would (``conditional``)."""

CREDENTIALS = {
    "seatToken": "a seat's token (`Authorization: Bearer`)",
    "invitationToken": "a private table's invitation (`Authorization: Bearer`)",
    "appKey": "the app's API key (`X-API-Key`)",
    "operatorKey": "the operator's key (`X-API-Key`)",
}


def _document_unauthorized(response: dict[str, Any], security: list[dict[str, Any]] | None) -> None:
    """A 401 names what its operation takes, and declares the challenge it sends."""
    ways = [" and ".join(CREDENTIALS[scheme] for scheme in way) for way in security or [] if way]
    takes = "; or ".join(ways) or "no credentials"
    optional = any(not way for way in security or [])
    response["description"] = (
        f"{'A credential sent is not valid' if optional else 'Credentials missing or not valid'}:"
        f" this operation takes {takes}{' (or none)' if optional else ''}"
    )
    response["headers"]["WWW-Authenticate"] = {
        "description": "The credentials this operation takes, as RFC 9110 challenges: "
        + ", ".join(f"`{challenge}`" for challenge in challenges_of(security)),
        "required": True,
        "schema": {"type": "string"},
    }


def finalize_contract(schema: dict[str, Any]) -> dict[str, Any]:
    """Make every documented error response problem+json (which is what the handlers send),
    document the rate limiter's 429 on every route and its headers on every answer, the
    headers of a 304 and the challenges of a 401, give every header the schema OpenAPI
    requires (ours are strings), and say that no string of a request may hold NUL."""
    add_components(schema, [ProblemDocument])
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _never_null(parameter["schema"])
            responses = operation["responses"]
            responses.setdefault("429", {"description": RATE_LIMITED})
            if operation.get("parameters") or "requestBody" in operation:
                responses.setdefault("400", {"description": "The request is not valid"})
            responses.setdefault("500", {"description": "Internal server error"})
            for status, response in responses.items():
                headers = response.setdefault("headers", {})
                headers.update(rate_limit_headers(limited=status == "429"))
                if status == "304":  # what the 200 would have sent (RFC 9110 §15.4.5)
                    sent = responses.get("200", {}).get("headers", {})
                    headers |= {name: sent[name] for name in NOT_MODIFIED_HEADERS if name in sent}
                if status == "401":
                    _document_unauthorized(response, operation.get("security"))
                for header in headers.values():
                    header.setdefault("schema", {"type": "string"})
                if status.isdigit() and int(status) >= 400:
                    response["content"] = problem_content()
    forbid_nul(schema)  # once parameters are never null (a pattern beside oneOf is kept)
    return schema


NUL_FREE = r"^[^\u0000]*$"
"""The pattern of a string without NUL, which the server refuses in every string of a request
(``check_request``: Postgres text and jsonb cannot hold it)."""
JSON_OBJECT = "JsonObject"
"""The component of a free-form JSON object in a request (table options, a match file)."""


def _json_value(nul_free: dict[str, Any], depth: int) -> dict[str, Any]:
    """A JSON value whose strings hold no NUL: an object is a ``JsonObject`` (generators read
    a model that refers to itself, not a union that does), arrays nest ``depth`` deep."""
    kinds: list[dict[str, Any]] = [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "number"},
        nul_free,
        {"$ref": component_ref(JSON_OBJECT)},
    ]
    if depth:
        kinds.append({"type": "array", "items": _json_value(nul_free, depth - 1)})
    return {"anyOf": kinds}


def forbid_nul(contract: dict[str, Any]) -> None:
    """Every string a request may carry (parameters, bodies, object keys, free-form values)
    without NUL, as the server takes them: a string with a pattern of its own keeps it, and
    gets ``NUL_FREE`` beside it unless it is anchored at both ends (ours then exclude NUL)."""
    components = contract.setdefault("components", {}).setdefault("schemas", {})
    nul_free = {"type": "string", "pattern": NUL_FREE}
    free_form = {"propertyNames": nul_free, "additionalProperties": _json_value(nul_free, 3)}
    components[JSON_OBJECT] = {
        "type": "object",
        "description": "A JSON object whose keys and strings hold no NUL character.",
        **free_form,
    }
    seen = {JSON_OBJECT}
    pending: list[Any] = []
    for path_item in contract.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            pending.extend(parameter["schema"] for parameter in operation.get("parameters", []))
            body = operation.get("requestBody", {}).get("content", {})
            pending.extend(media["schema"] for media in body.values() if "schema" in media)
    while pending:
        schema = pending.pop()
        if isinstance(schema, list):
            pending.extend(schema)
            continue
        if not isinstance(schema, dict):
            continue
        ref = schema.get("$ref", "")
        name = ref.rpartition("/")[2]
        if ref.startswith("#/components/schemas/") and name not in seen:
            seen.add(name)
            pending.append(components[name])
        kinds = schema.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds and not {"enum", "const", "format"} & schema.keys():
            pattern = schema.get("pattern")
            if pattern is None:
                schema["pattern"] = NUL_FREE
            elif not (pattern.startswith("^") and pattern.endswith("$")):
                schema.setdefault("allOf", []).append({"pattern": NUL_FREE})
        if "object" in kinds:
            if not {"properties", "additionalProperties", "patternProperties"} & schema.keys():
                schema.update(free_form)
            elif schema.get("additionalProperties") not in (None, False):
                schema.setdefault("propertyNames", nul_free)
        for key in ("properties", "$defs"):
            pending.extend(schema.get(key, {}).values())
        for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
            pending.append(schema.get(key))


def _never_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter is absent, never null: Litestar's ``X | None`` puts null in its type and
    enum, which generators turn into a nullable (or duplicated) type."""
    schema = {key: _exact(value) for key, value in schema.items()}
    if isinstance(schema.get("type"), list):
        kept = [kind for kind in schema["type"] if kind != "null"]
        schema["type"] = kept[0] if len(kept) == 1 else kept
    if "enum" in schema:
        schema["enum"] = [value for value in schema["enum"] if value is not None]
    if "oneOf" in schema:
        kept = [option for option in schema["oneOf"] if option.get("type") != "null"]
        if len(kept) == 1:
            del schema["oneOf"]
            schema.update(kept[0])
        else:
            schema["oneOf"] = kept
    return schema


def _exact(bound: Any) -> Any:
    """Litestar writes ``ge``/``le`` bounds as floats: 2**63 - 1 becomes 2**63, which a
    client would then send. Whole numbers become integers again."""
    if not isinstance(bound, float) or not bound.is_integer():
        return bound
    return PG_BIGINT_MAX if bound == float(PG_BIGINT_MAX) else int(bound)


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """Per-route documentation of the errors it may answer with (bodies are problem+json)."""

    descriptions = {
        400: "The request is not valid",
        401: "A seat token is required",
        403: "The token does not allow this",
        404: "Not found",
        409: "Conflict with the current state",
        422: "Refused by the rules or the resource's state",
        503: "A backing service did not answer",
    }
    return {
        status: ResponseSpec(
            data_container=ProblemDocument,
            description=descriptions[status],
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status in statuses
    }


SEAT_TOKEN = [{"seatToken": []}]
"""Routes that need a seat's token."""
OPTIONAL_SEAT_TOKEN = [{}, {"seatToken": []}, {"invitationToken": []}]
"""Routes that answer anyone (anything private: only with its invitation), and answer a seat's
token with what that seat may see."""
OPTIONAL_INVITATION = [{}, {"invitationToken": []}]
"""Routes open to anyone, except for a private table: then only with its invitation token."""
APP_KEY = [{"appKey": []}]
"""Routes a client app calls with its API key, secret or publishable: what it creates is its
own."""
SECRET_KEY = APP_KEY
"""Routes only the app's secret key may call (a publishable key gets 403 `secret-key-required`);
the contract cannot tell the kinds apart, the operation's description says so."""
APP_KEY_AND_INVITATION = [{"appKey": []}, {"appKey": [], "invitationToken": []}]
"""Joining: the table's app's key, and a private table's invitation too."""
SECRET_KEY_OR_SEATED = [{"appKey": []}, {"appKey": [], "seatToken": []}]
"""Bots at an open table: the app's secret key, or a publishable key with the token of a seat
at that table (a browser's player adds or removes bots at their own table)."""
SEATING_A_BOT = [*SECRET_KEY_OR_SEATED, {"appKey": [], "invitationToken": []}]
"""Seating a bot: as ``SECRET_KEY_OR_SEATED``; the secret key at a private table with its
invitation (or a seat's token)."""
SECRET_KEY_OR_FORMER_HOLDER = [{"appKey": []}, {"seatToken": []}, {"appKey": [], "seatToken": []}]
"""Re-seating: the match's app's secret key, or the token the seat had before a bot took it
over (with the app's publishable key, or no key)."""
OPERATOR_KEY = [{"operatorKey": []}]
"""The operator's routes: apps, their keys and quotas."""


DOCS_ASSETS = "/docs/assets"
"""Where each service serves the documentation UI's files from the installed
``swagger-ui-bundle`` package, so ``/docs`` works without internet."""


def docs_ui() -> SwaggerRenderPlugin:
    """Swagger UI whose page loads only this service's own files (no CDN)."""
    return SwaggerRenderPlugin(
        js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{DOCS_ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{DOCS_ASSETS}/favicon-32x32.png'>",
        path="/",
    )


CONTRACT_VERSION = "0.2.0"
"""The public contract's version, semver for its clients: a change that breaks a client bumps
the major (while 0.x, the minor) and is listed in openapi/CHANGELOG.md; a test compares the
contract with the newest of openapi/released/ and refuses a breaking change the version does
not announce (``tools/contract_diff.py``)."""


def openapi_config(service: str) -> OpenAPIConfig:

    seat_token = SecurityScheme(
        type="http",
        scheme="bearer",
        description="The secret token a seat got when joining its table",
    )
    invitation_token = SecurityScheme(
        type="http",
        scheme="bearer",
        description="A private table's invitation, given once to its creator: to see the table,"
        " join it and watch its match as a spectator",
    )
    app_key = SecurityScheme(
        type="apiKey",
        name="X-API-Key",
        security_scheme_in="header",
        description="A client app's API key, given once by the operator: tables, their matches"
        " and webhook subscriptions belong to the app that made them. A key is of one of two"
        " kinds. A secret key (`pt_sk_...`; scopes `tables`, `webhooks`) stays on the app's"
        " server and may do all its scopes allow. A publishable key (`pt_pk_...`; only"
        " `tables`) may be shipped to browsers, so it is no secret: it creates, lists, reads"
        " and joins tables, and with a seat's token seats or removes a bot at that seat's"
        " table; players start, leave, play and rematch with their seat tokens. Re-seating"
        " a player, an invitation's rotation or revocation, imports, webhooks, tables of bots"
        " only, and bots seated without a seat's token need the secret key (403"
        " `secret-key-required`). `playtable stack` prints a development key of each kind",
    )
    operator_key = SecurityScheme(
        type="apiKey",
        name="X-API-Key",
        security_scheme_in="header",
        description="The operator's key (`PLAYTABLE_OPERATOR_KEY`, or one made with `playtable"
        " apps operator-key`): manages apps, their keys and quotas",
    )
    return OpenAPIConfig(
        title=f"playtable {service} API",
        version=CONTRACT_VERSION,
        description="Event-sourced backend for turn-based tabletop games",
        path="/docs",
        render_plugins=[docs_ui()],
        components=Components(
            security_schemes={
                "seatToken": seat_token,
                "invitationToken": invitation_token,
                "appKey": app_key,
                "operatorKey": operator_key,
            }
        ),
    )


# --- tokens ----------------------------------------------------------------------------------


def new_token() -> str:
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """Tokens are stored and compared only as hashes."""
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(request: Request[Any, Any, Any]) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Problem(
            401,
            "bad-authorization",
            "Bad Authorization header",
            "use 'Authorization: Bearer <token>'",
        )
    return token.strip()


def required_bearer_token(request: Request[Any, Any, Any]) -> str:
    token = bearer_token(request)
    if token is None:
        raise Problem(
            401, "token-required", "Seat token required", "send 'Authorization: Bearer <token>'"
        )
    return token


# --- health ----------------------------------------------------------------------------------


class Health(msgspec.Struct):
    service: str
    status: str
    instance: str


READY_TIMEOUT_S = 1.0
"""How long /ready waits for each dependency."""
READY_KEPT_S = 1.0
"""How long an answer of /ready is reused: it is not rate limited (load balancers poll it),
so however often it is asked, each dependency is asked at most once in this time."""

ReadyCheck = Callable[[], Awaitable[Any]]
"""Asks a dependency something cheap; fails (or outlasts ``READY_TIMEOUT_S``) when it is down."""


class Readiness(msgspec.Struct):
    service: str
    status: str
    instance: str
    checked: list[str]
    """The dependencies that answered: all of the service's."""


class ReadyChecks:
    """The dependencies a service needs to do its work, asked together (within
    ``READY_TIMEOUT_S``) by one /ready at a time, the answer reused for ``READY_KEPT_S``."""

    def __init__(self, checks: dict[str, ReadyCheck]) -> None:
        self.checks = checks
        self._failed: list[str] = []
        self._at: float | None = None
        self._checking: asyncio.Task[list[str]] | None = None

    async def failed(self) -> list[str]:
        """What did not answer (what and why, no more: no address or credential)."""
        if self._at is not None and time.monotonic() - self._at < READY_KEPT_S:
            return self._failed
        if self._checking is None:
            self._checking = asyncio.create_task(self._check())
        return await asyncio.shield(self._checking)

    async def _check(self) -> list[str]:
        try:
            answers = await asyncio.gather(
                *(asyncio.wait_for(check(), READY_TIMEOUT_S) for check in self.checks.values()),
                return_exceptions=True,
            )
            self._failed = [
                f"{name} did not answer ({type(answer).__name__})"
                for name, answer in zip(self.checks, answers, strict=True)
                if isinstance(answer, BaseException)
            ]
            self._at = time.monotonic()
            return self._failed
        finally:
            self._checking = None


def ready_route(service: str, instance: str, checks: ReadyChecks) -> Any:
    @get(
        "/ready",
        operation_id=f"get{service.capitalize()}Readiness",
        tags=["health"],
        summary=f"Whether the {service} service can work: its dependencies answer",
        responses=problem_responses(503),
    )
    async def ready() -> Readiness:
        failed = await checks.failed()
        if failed:
            raise Problem(503, "not-ready", "Not ready", "; ".join(failed))
        return Readiness(
            service=service, status="ready", instance=instance, checked=[*checks.checks]
        )

    return ready


def metrics_route(metrics: Metrics) -> Any:
    @get("/metrics", include_in_schema=False, media_type=METRICS_CONTENT_TYPE)
    async def serve_metrics() -> Response[bytes]:
        return Response(await metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    return serve_metrics


def health_route(service: str, instance: str) -> Any:
    @get(
        "/health",
        operation_id=f"get{service.capitalize()}Health",
        tags=["health"],
        summary=f"Liveness of the {service} service",
        sync_to_thread=False,
    )
    def health() -> Health:
        return Health(service=service, status="ok", instance=instance)

    return health


# --- conditional reads -----------------------------------------------------------------------

IfNoneMatch = Annotated[
    str | None,
    HeaderParameter(
        name="If-None-Match",
        required=False,
        description="The ETag of the copy the client holds: 304 with no body if it is current",
    ),
]


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110's weak comparison of ``If-None-Match`` with the current ETag."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    return any(tag.strip().removeprefix("W/") == etag for tag in if_none_match.split(","))


def conditional(content: Any, etag: str, if_none_match: str | None) -> Response[Any]:
    """``content`` with its ETag, or 304 with no body when the client's copy is current. The
    answer depends on the token, so caches keep one per Authorization, and revalidate."""
    headers = {"ETag": etag, "Cache-Control": "private, no-cache", "Vary": "Authorization"}
    if etag_matches(if_none_match, etag):
        return Response(content=None, status_code=304, headers=headers)
    return Response(content, headers=headers)


def conditional_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """``problem_responses`` of a conditional read, with its 304."""
    not_modified = ResponseSpec(
        data_container=None, description="The copy named by If-None-Match is current: no body"
    )
    return {304: not_modified, **problem_responses(*statuses)}


CONDITIONAL_READ: dict[str, Any] = {
    "response_headers": [
        ResponseHeader(
            name="ETag",
            description="The version read, as the caller sees it: send it back as If-None-Match",
            documentation_only=True,
        ),
        ResponseHeader(
            name="Cache-Control",
            description="`private, no-cache`: what a seat sees is for it only; revalidate",
            documentation_only=True,
        ),
        ResponseHeader(name="Vary", description="`Authorization`", documentation_only=True),
    ],
}
"""Route arguments documenting ``conditional``'s headers."""


# --- composition -----------------------------------------------------------------------------


STREAM_AFTER_LITESTAR = "playtable.stream_after_litestar"
"""The ``scope`` key under which a long-lived stream (a live feed) leaves the rest of its body,
``(receive, send) -> None``, for ``ServiceApp`` to send once Litestar has returned."""

StreamRest = Callable[[Any, Any], Awaitable[None]]


class ServiceApp(Litestar):
    """A Litestar app that answers HEAD wherever it answers GET (RFC 9110 requires it of
    every general-purpose server): the GET's status and headers without its body; whose
    OPTIONS name every method of the path (Litestar 2's name one handler's only); that
    refuses a client over its rate limits before routing, so no request escapes them; and
    that sends a live feed's events after Litestar has returned, so that thousands of open
    feeds hold none of its frames and their events pass through no middleware."""

    def __init__(self, *, rate_limiter: RateLimiter | None = None, **config: Any) -> None:
        super().__init__(**config)
        self.rate_limiter = rate_limiter
        self.http_metrics = HttpMetrics()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "OPTIONS":
            await self._answer(scope, receive, self._allowing(scope, send))
            return
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self._answer(scope, receive, send)
            return
        answered = False

        async def send_headers_only(message: Any) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                await send(message)
            elif message["type"] == "http.response.body" and not answered:
                answered = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def receive_until_answered() -> Any:
            if answered:  # a stream (a live feed) stops once its headers are out
                return {"type": "http.disconnect"}
            return await receive()

        as_get = {**scope, "method": "GET"}
        await self._answer(as_get, receive_until_answered, send_headers_only)

    async def _answer(self, scope: Any, receive: Any, send: Any) -> None:
        """Litestar's answer, or the rate limiter's 429 (as the exception handlers send it),
        counted in the metrics, traced and logged under the request's correlation id; then
        the rest of a live feed, outside the request's span."""
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        started = time.perf_counter()
        correlation_id = _request_id(scope)
        with log_context(correlation_id=correlation_id):
            scope[STREAM_AFTER_LITESTAR] = None
            with tracing.http_request(scope, correlation_id) as traced:
                await self._answer_limited(scope, receive, traced(send), started)
            rest: StreamRest | None = scope.pop(STREAM_AFTER_LITESTAR)
            if rest is not None:  # the status and headers went out through Litestar already
                await rest(receive, send)

    async def _answer_limited(self, scope: Any, receive: Any, send: Any, started: float) -> None:
        """Litestar's answer, unless the client is over its rate limits; one wrapper of
        ``send`` counts the answer and adds the limiter's headers."""
        limit_headers = None
        if self.rate_limiter is not None:
            try:
                limit_headers = await self.rate_limiter.admit(scope)
            except Problem as refused:
                send = self.http_metrics.wrap(scope, send, started)
                request: Request[Any, Any, Any] = Request(scope, receive, send)
                response = _respond(request, refused).to_asgi_response(None, request)
                await response(scope, receive, send)
                return
        send = self.http_metrics.wrap(scope, send, started, limit_headers)
        await super().__call__(scope, receive, send)

    def _allowing(self, scope: Any, send: Any) -> Any:
        """``send`` with the ``Allow`` of an OPTIONS answer naming all the path's methods (the
        router has put the path's template in ``scope`` by then)."""

        async def send_allowing(message: Any) -> None:
            methods = self._methods_by_path.get(scope.get("path_template", ""))
            if message["type"] == "http.response.start" and methods:
                allow = _allowed(", ".join(methods)).encode()
                headers = [(k, v) for k, v in message["headers"] if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", allow)]}
            await send(message)

        return send_allowing

    @functools.cached_property
    def _methods_by_path(self) -> dict[str, set[str]]:
        """Every method each path template takes, over all its routes."""
        methods: dict[str, set[str]] = {}
        for route in self.routes:
            if isinstance(route, HTTPRoute):
                methods.setdefault(route.path_format, set()).update(route.methods)
        return methods


REQUEST_ID_HEADER = b"x-request-id"
"""A caller's (the gateway's) id of a request, kept as its correlation id when it is sane."""
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _request_id(scope: Any) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            sent = value.decode("latin-1")
            if _SANE_ID.fullmatch(sent):
                return sent
    return new_id()


def service_app(
    service: str,
    instance_id: str,
    handlers: list[Any],
    dependencies: dict[str, Any],
    *,
    on_startup: list[Any],
    on_shutdown: list[Any],
    ready: dict[str, ReadyCheck] | None = None,
    metrics: Metrics | None = None,
    settings: Settings | None = None,
    guards: list[Any] | None = None,
) -> Litestar:
    """A public service's Litestar app: its routes plus /health (alive), /ready (``ready``,
    its dependencies, answer) and /metrics (``metrics``), one object per named dependency,
    problem+json for every error and its part of the OpenAPI contract; ``guards`` (who may
    ask: ``shared/access.py``) before any body is read; with ``settings``, each
    client's requests and live feeds are limited (``shared/ratelimit.py``)."""

    def provider(value: Any) -> Provide:
        return Provide(lambda: value, use_cache=True, sync_to_thread=False)

    on_startup = [tune_collector, *on_startup]
    on_shutdown = [*on_shutdown, process_ended]
    rate_limiter = None
    if settings is not None and settings.rate_limits:
        from shared.ratelimit import RateLimiter  # built on this module's problems

        rate_limiter = RateLimiter(settings)
        on_startup = [rate_limiter.start, *on_startup]
        on_shutdown = [*on_shutdown, rate_limiter.close]
    return ServiceApp(
        rate_limiter=rate_limiter,
        route_handlers=[
            health_route(service, instance_id),
            ready_route(service, instance_id, ReadyChecks(ready or {})),
            metrics_route(metrics or Metrics()),
            create_static_files_router(
                DOCS_ASSETS, directories=[swagger_ui_path], include_in_schema=False
            ),
            *handlers,
        ],
        dependencies={name: provider(value) for name, value in dependencies.items()},
        exception_handlers=EXCEPTION_HANDLERS,
        guards=guards,
        before_request=check_request,
        plugins=[DocumentedAsPlugin()],
        on_startup=on_startup,
        on_shutdown=on_shutdown,
        openapi_config=openapi_config(service),
        logging_config=None,  # the process's own (``shared/logs.py``): JSON lines
    )
