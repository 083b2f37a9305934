"""One Litestar application per service: the routes, the error handlers and the middleware
they all share."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from litestar import Litestar, Request
from litestar.di import Provide
from litestar.routes import HTTPRoute
from litestar.static_files import create_static_files_router

from shared.domain.messages import new_id
from shared.edge.contract import DOCS_ASSETS, DocumentedAsPlugin, docs_assets, openapi_config
from shared.edge.errors import EXCEPTION_HANDLERS, Problem, allowed_methods, problem_answer
from shared.edge.guard import check_request
from shared.edge.health import health_route, metrics_route, ready_route
from shared.infra import tracing
from shared.infra.collector import tune_collector
from shared.infra.logs import log_context
from shared.infra.metrics import HttpMetrics, Metrics, process_ended
from shared.infra.readiness import ReadyCheck, ReadyChecks
from shared.infra.settings import Settings

if TYPE_CHECKING:
    from shared.edge.ratelimit import RateLimiter


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
            body_read, send_after_body = reading_the_body_first(receive, send)
            with tracing.http_request(scope, correlation_id) as traced:
                await self._answer_limited(scope, body_read, traced(send_after_body), started)
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
                response = problem_answer(request, refused).to_asgi_response(None, request)
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
                allow = allowed_methods(", ".join(methods)).encode()
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


UNREAD_BODY_LIMIT = 1024 * 1024
"""How much of a body left unread a service reads before it answers (the gateway's limit on
a body); past it, the connection is cut as before."""


def reading_the_body_first(receive: Any, send: Any) -> tuple[Any, Any]:
    """``receive`` and ``send`` such that an answer given before the request's body was read
    (a refusal: no key, over a limit, no such route) reads it first. A server that closes a
    connection with bytes unread resets it, and the client may lose the answer with it (RFC
    9112 section 9.6): a 401 to a 100 kB body came as a reset two times in three here."""
    unread = True

    async def receive_noting_the_end() -> Any:
        nonlocal unread
        message = await receive()
        unread = message["type"] == "http.request" and message.get("more_body", False)
        return message

    async def send_after_the_body(message: Any) -> None:
        if unread and message["type"] == "http.response.start":
            left = UNREAD_BODY_LIMIT
            while unread and left > 0:
                chunk = await receive_noting_the_end()
                left -= len(chunk.get("body", b""))
        await send(message)

    return receive_noting_the_end, send_after_the_body


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
    ask: ``shared/edge/access.py``) before any body is read; with ``settings``, each
    client's requests and live feeds are limited (``shared/edge/ratelimit.py``)."""

    def provider(value: Any) -> Provide:
        return Provide(lambda: value, use_cache=True, sync_to_thread=False)

    on_startup = [tune_collector, *on_startup]
    on_shutdown = [*on_shutdown, process_ended]
    rate_limiter = None
    if settings is not None and settings.rate_limits:
        from shared.edge.ratelimit import RateLimiter  # built on this module's problems

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
                DOCS_ASSETS, directories=[docs_assets()], include_in_schema=False
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
        logging_config=None,  # the process's own (``shared/infra/logs.py``): JSON lines
    )
