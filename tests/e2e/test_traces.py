"""Traces end to end: every service exports over OTLP/HTTP to a receiver in this test, and one
move is one trace from its HTTP request through the rules worker to its webhook's delivery."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.e2e.conftest import Stack, free_port, running_stack
from tests.e2e.play import auth, open_table
from tests.e2e.webhooks.service import Hooks, eventually, running_webhooks

pytestmark = pytest.mark.e2e

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
"""The trace id of the client's own ``traceparent`` on the move: the services continue it."""
CALLER_SPAN = "00f067aa0ba902b7"


@dataclass(frozen=True)
class Exported:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    links: list[str]
    """The trace ids it links to."""


@dataclass
class Collector:
    """What the OTLP receiver was sent, span by span."""

    endpoint: str
    spans: list[Exported] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, service: str, name: str, trace_id: str | None = None) -> list[Exported]:
        with self.lock:
            return [
                span
                for span in self.spans
                if span.service == service
                and span.name == name
                and trace_id in (None, span.trace_id)
            ]


def _value(value: AnyValue) -> Any:
    return getattr(value, value.WhichOneof("value"))


def serve_collector() -> tuple[Collector, ThreadingHTTPServer]:
    port = free_port()
    collector = Collector(endpoint=f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            body = self.rfile.read(int(self.headers["content-length"]))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            assert self.path == "/v1/traces"
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                found = {a.key: _value(a.value) for a in resource.resource.attributes}
                for scope in resource.scope_spans:
                    with collector.lock:
                        collector.spans += [
                            Exported(
                                service=found["service.name"],
                                name=span.name,
                                kind=span.kind,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                attributes={a.key: _value(a.value) for a in span.attributes},
                                links=[link.trace_id.hex() for link in span.links],
                            )
                            for span in scope.spans
                        ]
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return collector, server


@dataclass
class Traced:
    stack: Stack
    hooks: Hooks
    collector: Collector


@pytest.fixture(scope="module")
def traced(database_url: str, redis_url: str) -> Iterator[Traced]:
    collector, server = serve_collector()
    tracing_env = {
        "PLAYTABLE_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within 0.1 s, not 5 s
    }
    try:
        with (
            running_stack(database_url, redis_url, **tracing_env) as stack,
            running_webhooks(stack) as hooks,
        ):
            yield Traced(stack, hooks, collector)
    finally:
        server.shutdown()


KIND_SERVER, KIND_CLIENT, KIND_CONSUMER = 2, 3, 5
"""``Span.SpanKind`` in OTLP's protobuf."""
SECRET_MARKERS = ("pt_", "whsec_", "Bearer", "token", "hands", "deck")


def test_a_move_is_one_trace_from_its_request_to_its_webhook(traced: Traced) -> None:
    stack, hooks, collector = traced.stack, traced.hooks, traced.collector
    subscription = hooks.subscribe("traced")
    match_id, tokens = open_table(stack, "hanabi", 2, seed=7)
    legal = stack.match.get(f"/matches/{match_id}/actions", headers=auth(tokens[0])).json()
    moved = stack.match.post(
        f"/matches/{match_id}/actions",
        json={
            "game": "hanabi",
            "expected_version": legal["version"],
            "action": legal["actions"][0],
        },
        headers={**auth(tokens[0]), "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
    )
    assert moved.status_code == 201, moved.text

    request = eventually(
        lambda: collector.named("match", "POST /matches/{match_id}/actions", CALLER_TRACE),
        10,
        "the move's HTTP span",
    )[0]
    assert request.kind == KIND_SERVER and request.parent_id == CALLER_SPAN
    assert request.attributes["playtable.match_id"] == match_id
    assert request.attributes["http.response.status_code"] == 201
    decide = collector.named("match", "rules Decide", CALLER_TRACE)
    assert [(s.kind, s.parent_id) for s in decide] == [(KIND_CLIENT, request.span_id)]
    worker = eventually(lambda: collector.named("rules", "rules Decide", CALLER_TRACE), 10)
    assert [(s.kind, s.parent_id) for s in worker] == [(KIND_SERVER, decide[0].span_id)]
    assert worker[0].attributes["playtable.game"] == "hanabi"

    # the move's event, published and delivered: the delivery continues the move's trace and
    # the dispatcher's batch links to it
    delivery = eventually(
        lambda: collector.named("webhooks", "webhook POST", CALLER_TRACE), 20, "the delivery"
    )[0]
    assert delivery.kind == KIND_CLIENT and delivery.parent_id == request.span_id
    assert delivery.attributes["playtable.subscription_id"] == subscription["id"]
    assert delivery.attributes["http.response.status_code"] == 200
    assert delivery.attributes["playtable.webhook.outcome"] == "delivered"
    assert eventually(
        lambda: [
            s for s in collector.named("webhooks", "webhooks dispatch") if CALLER_TRACE in s.links
        ]
    )

    # the start: the lobby's request, its command handled by the match service, and SetUp
    start = collector.named("lobby", "POST /tables/{table_id}/start")
    assert len(start) == 1
    handled = eventually(
        lambda: collector.named("match", "command CreateMatch", start[0].trace_id), 10
    )
    assert handled[0].kind == KIND_CONSUMER and handled[0].parent_id == start[0].span_id
    assert handled[0].attributes["playtable.match_id"] == match_id
    set_up = collector.named("match", "rules SetUp", start[0].trace_id)
    assert [s.parent_id for s in set_up] == [handled[0].span_id]
    eventually(lambda: collector.named("rules", "rules SetUp", start[0].trace_id), 10)
    eventually(lambda: collector.named("webhooks", "webhook POST", start[0].trace_id), 20)

    with collector.lock:
        services = {span.service for span in collector.spans}
        shown = repr([span.attributes for span in collector.spans])
    assert services == {"lobby", "match", "rules", "webhooks", "webhooks-api"}
    assert not any(marker in shown for marker in SECRET_MARKERS)
    assert not any(token in shown for token in tokens)
