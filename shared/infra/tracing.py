"""OpenTelemetry traces: one trace from an HTTP request through the rules service and the
published events to their webhooks, carried in the messages as W3C ``traceparent`` strings.

Off unless an OTLP endpoint is configured (``PLAYTABLE_OTLP_ENDPOINT`` or the standard
``OTEL_EXPORTER_OTLP_ENDPOINT``): then ``configure`` gives the process a tracer whose spans a
background thread exports in batches over OTLP/HTTP. Off, every helper here returns at once
without touching the context, so tracing costs nothing per request.

No span attribute ever holds a secret or hidden information (tokens, keys, hands, states,
actions, webhook URLs): only ids, names, counts and status codes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared.infra.settings import Settings

Attributes = Mapping[str, str | int | bool]
Send = Callable[[Any], Awaitable[None]]

CLIENT = SpanKind.CLIENT
SERVER = SpanKind.SERVER
CONSUMER = SpanKind.CONSUMER

TRACES_PATH = "/v1/traces"
"""Appended to the endpoint, as the OTLP exporters do with ``OTEL_EXPORTER_OTLP_ENDPOINT``."""
UNTRACED_PATHS = frozenset({"/health", "/ready", "/metrics"})
"""Asked every few seconds by probes and scrapers: a trace each would bury the others."""
TRACED_PATH_IDS = ("match_id", "table_id", "subscription_id")
"""Path parameters an HTTP span carries as attributes (``playtable.<name>``)."""

_propagator = TraceContextTextMapPropagator()
_provider: TracerProvider | None = None
_tracer: trace.Tracer | None = None


def configure(settings: Settings, service: str) -> None:
    """Export this process's spans as ``service`` when an endpoint is set (once per process:
    a second call keeps the first tracer)."""
    if not settings.otlp_endpoint or _provider is not None:
        return
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": service, "service.instance.id": settings.instance_id}
        )
    )
    endpoint = settings.otlp_endpoint.rstrip("/") + TRACES_PATH
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    use(provider)


def use(provider: TracerProvider | None) -> None:
    """Trace into ``provider`` from now on (``None``: tracing off); ``configure`` calls it,
    tests call it with an in-memory exporter."""
    global _provider, _tracer
    _provider = provider
    _tracer = None if provider is None else provider.get_tracer("playtable")


def enabled() -> bool:
    return _tracer is not None


def traceparent() -> str | None:
    """The W3C ``traceparent`` of the span under way, for a message to carry (``None``: none,
    or tracing off)."""
    if _tracer is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def _extract(traceparent: str) -> Any:
    return _propagator.extract({"traceparent": traceparent})


def link(traceparent: str) -> Link | None:
    """A link to the span a message's ``traceparent`` names (``None`` if it is not one)."""
    context = trace.get_current_span(_extract(traceparent)).get_span_context()
    return Link(context) if context.is_valid else None


_OFF: contextlib.AbstractContextManager[Span] = contextlib.nullcontext(INVALID_SPAN)
"""What every helper gives when off: a span that records nothing, costing no generator."""


def span(
    name: str,
    kind: SpanKind = SpanKind.INTERNAL,
    *,
    parent: str | None = None,
    links: Iterable[str | None] = (),
    attributes: Attributes | None = None,
) -> contextlib.AbstractContextManager[Span]:
    """A span around the block, current inside it: the child of the span the ``parent``
    traceparent names (a message's), else of the span under way, else a new trace's root;
    ``links`` are traceparents it follows from too (a batch's messages). An exception ends it
    as an error. Off: a span that records nothing."""
    if _tracer is None:
        return _OFF
    context = None if parent is None else _extract(parent)
    distinct = filter(None, dict.fromkeys(links))  # a move's events share its traceparent
    followed = [found for found in map(link, distinct) if found is not None]
    return _started(_tracer, name, kind, context, attributes, followed)


@contextlib.contextmanager
def _started(
    tracer: trace.Tracer,
    name: str,
    kind: SpanKind,
    context: Any,
    attributes: Attributes | None,
    links: list[Link] | None = None,
) -> Iterator[Span]:
    """A current span whose exception is recorded by its type alone: an error's text may
    hold what a span must not (a value from a request, a query's parameters)."""
    with tracer.start_as_current_span(
        name,
        context=context,
        kind=kind,
        links=links,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except Exception as error:
            failed(current, type(error).__name__)
            raise


def continued(
    name: str, kind: SpanKind, parent: str | None, attributes: Attributes | None = None
) -> contextlib.AbstractContextManager[Span]:
    """A span continuing the trace of a message's ``parent``; none (a span that records
    nothing) for a message that came without one: its sender was not tracing (a probe)."""
    if parent is None:
        return _OFF
    return span(name, kind, parent=parent, attributes=attributes)


def within_trace(
    name: str, kind: SpanKind, attributes: Attributes | None = None
) -> contextlib.AbstractContextManager[Span]:
    """A child of the span under way; none when no trace is under way (a readiness probe's
    question, work in the background), which would only start traces of one span."""
    if _tracer is None or not trace.get_current_span().is_recording():
        return _OFF
    return span(name, kind, attributes=attributes)


def failed(current: Span, error_type: str) -> None:
    """Mark ``current`` as failed, ``error_type`` saying how in a word (no raw text)."""
    current.set_status(StatusCode.ERROR)
    current.set_attribute("error.type", error_type)


def http_request(
    scope: dict[str, Any], correlation_id: str
) -> contextlib.AbstractContextManager[Callable[[Send], Send]]:
    """The server span of an HTTP request, continuing the caller's trace (its ``traceparent``
    header). Gives a wrapper for ``send`` that records the status; once routed, the span is
    named after its route template (``POST /matches/{match_id}/actions``) and carries the ids
    in its path. Untraced (identity wrapper): tracing off, and the probes' paths."""
    if _tracer is None or scope["path"] in UNTRACED_PATHS:
        return _UNTRACED_REQUEST
    return _http_span(_tracer, scope, correlation_id)


@contextlib.contextmanager
def _http_span(
    tracer: trace.Tracer, scope: dict[str, Any], correlation_id: str
) -> Iterator[Callable[[Send], Send]]:
    carrier = {
        name.decode("latin-1"): value.decode("latin-1")
        for name, value in scope["headers"]
        if name in (b"traceparent", b"tracestate")
    }
    method = scope["method"]
    context = _propagator.extract(carrier) if carrier else None
    attributes = {"http.request.method": method, "playtable.correlation_id": correlation_id}
    with _started(tracer, method, SpanKind.SERVER, context, attributes) as current:

        def wrap(send: Send) -> Send:
            async def send_traced(message: Any) -> None:
                if message["type"] == "http.response.start":
                    status = message["status"]
                    current.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        failed(current, str(status))
                await send(message)

            return send_traced

        try:
            yield wrap
        finally:
            route = scope.get("path_template")
            if route:
                current.update_name(f"{method} {route}")
                current.set_attribute("http.route", route)
            for name, value in (scope.get("path_params") or {}).items():
                if name in TRACED_PATH_IDS:
                    current.set_attribute(f"playtable.{name}", str(value))


def _unchanged(send: Send) -> Send:
    return send


_UNTRACED_REQUEST = contextlib.nullcontext(_unchanged)
