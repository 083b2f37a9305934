"""RFC 9457 problems: the exception a handler raises, and how every failure becomes one."""

from __future__ import annotations

import logging
import math
import time
from typing import Annotated, Any

import msgspec
import psycopg
import redis.exceptions
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

log = logging.getLogger(__name__)


PROBLEM_MEDIA_TYPE = "application/problem+json"

PROBLEM_TYPE_BASE = "https://playtable.dev/problems/"

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


def problem_answer(request: Request[Any, Any, Any], problem: Problem) -> Response[ProblemDocument]:
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
        headers["allow"] = allowed_methods(headers["allow"])
    problem = Problem(exc.status_code, code, title, detail, headers=headers or None, errors=errors)
    return problem_answer(request, problem)


def allowed_methods(allow: str) -> str:
    """The methods a 405 names: HEAD wherever GET is (``ServiceApp`` answers it)."""
    methods = [method.strip() for method in allow.split(",") if method.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.append("HEAD")
    return ", ".join(sorted(methods))


def _unexpected(request: Request[Any, Any, Any], exc: Exception) -> Response[ProblemDocument]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    problem = Problem(500, "internal-error", "Internal server error", "the error has been logged")
    return problem_answer(request, problem)


UNAVAILABLE_QUIET_S = 10.0
"""A backing service's outage is logged with the first request it fails, and again only once
that long has passed without another: every request of an outage logged a line."""


class Quieted:
    """Says whether a repeated event is worth a log line: the first time, and again only after
    ``quiet_s`` without one."""

    def __init__(self, quiet_s: float) -> None:
        self.quiet_s = quiet_s
        self._last_at = -math.inf

    def due(self) -> bool:
        now = time.monotonic()
        due, self._last_at = now - self._last_at > self.quiet_s, now
        return due


_unavailable_log = Quieted(UNAVAILABLE_QUIET_S)


def _unavailable(request: Request[Any, Any, Any], exc: Exception) -> Response[ProblemDocument]:
    """Postgres or Redis is down or overloaded: worth retrying, and nothing for the client to
    fix, so the answer names no internals."""
    if _unavailable_log.due():
        log.warning(
            "backing service unavailable on %s %s: %r; answering 503 (not logged again until"
            " %.0f s pass without one)",
            request.method,
            request.url.path,
            exc,
            UNAVAILABLE_QUIET_S,
        )
    problem = Problem(
        503, "service-unavailable", "Service unavailable", "a backing service did not answer"
    )
    return problem_answer(request, problem)


def _refused_by_postgres(
    request: Request[Any, Any, Any], exc: psycopg.DataError
) -> Response[ProblemDocument]:
    """A value Postgres cannot store (out of range, not valid text) came from the request."""
    log.warning("data refused by Postgres on %s %s: %s", request.method, request.url.path, exc)
    problem = invalid_request("a value is out of range or is not storable text")
    return problem_answer(request, problem)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    Problem: problem_answer,
    HTTPException: _http_exception,
    psycopg.OperationalError: _unavailable,  # includes psycopg_pool.PoolTimeout
    redis.exceptions.ConnectionError: _unavailable,
    redis.exceptions.TimeoutError: _unavailable,
    psycopg.DataError: _refused_by_postgres,
    Exception: _unexpected,
}
