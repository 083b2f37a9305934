"""Traces (``shared/infra/tracing.py``): off unless an endpoint is set, and then the trace context
crosses every message envelope, so each hop's span continues the one before."""

from __future__ import annotations

import timeit
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar import get
from litestar.params import FromPath
from litestar.testing import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from shared.domain import rules_api as api
from shared.domain.messages import (
    CommandEnvelope,
    EventEnvelope,
    EventMetadata,
    command,
    decode_command,
    metadata,
)
from shared.edge.app import service_app
from shared.infra import rpc, tracing
from shared.infra.settings import Settings

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
"""A caller's ``traceparent`` header (the W3C specification's example)."""


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test, into memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)
        provider.shutdown()


def ids(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


@get("/matches/{match_id:str}/things/{name:str}", sync_to_thread=False)
def thing(match_id: FromPath[str], name: FromPath[str]) -> str:
    return name


@get("/broken", sync_to_thread=False)
def broken() -> None:
    raise RuntimeError("secret detail")


def app() -> Any:
    return service_app("test", "test-1", [thing, broken], {}, on_startup=[], on_shutdown=[])


def test_off_by_default_nothing_is_exported_or_carried() -> None:
    tracing.configure(Settings(), "match")
    assert not tracing.enabled()
    with tracing.span("work", tracing.CONSUMER) as span:
        assert not span.is_recording()
        assert tracing.traceparent() is None
        assert metadata(correlation_id="c").traceparent is None
        assert command("CreateMatch", {}).traceparent is None
    with TestClient(app()) as client:
        answer = client.get("/matches/m1/things/x", headers={"traceparent": CALLER})
    assert answer.status_code == 200
    assert tracing.traceparent() is None


def test_off_costs_next_to_nothing() -> None:
    """Off, a span is one shared null context: well under 5 µs (a move takes over 1 ms)."""
    runs = 20_000

    def traced() -> None:
        with tracing.span("work", tracing.CLIENT):
            pass

    assert timeit.timeit(traced, number=runs) / runs < 5e-6


def test_an_endpoint_turns_on_batched_otlp_export(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"})
    assert settings.otlp_endpoint == "http://127.0.0.1:4318/"
    own = Settings.from_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "PLAYTABLE_OTLP_ENDPOINT": "http://b:4318"}
    )
    assert own.otlp_endpoint == "http://b:4318"
    added: list[Any] = []
    monkeypatch.setattr(TracerProvider, "add_span_processor", lambda _, p: added.append(p))
    try:
        tracing.configure(settings, "rules")
        assert tracing.enabled()
        tracing.configure(Settings(otlp_endpoint="http://elsewhere:4318"), "lobby")  # kept
        (processor,) = added
        assert isinstance(processor, BatchSpanProcessor)
        exporter = processor._batch_processor._exporter  # noqa: SLF001
        assert exporter._endpoint == "http://127.0.0.1:4318/v1/traces"  # noqa: SLF001
        provider = tracing._provider  # noqa: SLF001
        assert provider is not None
        assert provider.resource.attributes["service.name"] == "rules"
    finally:
        tracing.use(None)
        processor.shutdown()


def test_event_metadata_carries_the_trace_and_old_events_still_decode(
    spans: InMemorySpanExporter,
) -> None:
    with tracing.span("POST /matches/{match_id}/actions", tracing.SERVER) as span:
        meta = metadata(correlation_id="c")
        sent = command("CreateMatch", {"match_id": "m"})
    assert meta.traceparent == ids(spans.get_finished_spans()[0])
    envelope = EventEnvelope(
        stream_id="match-m", version=1, type="Played", data=msgspec.Raw(b"{}"), metadata=meta
    )
    decoded = msgspec.json.decode(msgspec.json.encode(envelope), type=EventEnvelope)
    assert decoded.metadata.traceparent == meta.traceparent
    assert decode_command(msgspec.json.encode(sent)).traceparent == meta.traceparent
    assert span.get_span_context().span_id == int(meta.traceparent.split("-")[2], 16)
    # stored before tracing: no field, and none written when there is no trace
    old = b'{"event_id":"e","correlation_id":"c","occurred_at_ms":5}'
    assert msgspec.json.decode(old, type=EventMetadata).traceparent is None
    untraced = EventMetadata(event_id="e", correlation_id="c", occurred_at_ms=5)
    assert msgspec.json.encode(untraced) == old
    old_command = b'{"command_id":"x","type":"CreateMatch","body":{},"correlation_id":"x"}'
    assert msgspec.json.decode(old_command, type=CommandEnvelope).traceparent is None


def test_a_rules_request_continues_its_callers_trace(spans: InMemorySpanExporter) -> None:
    request = api.Decide(game="hanabi", state=b"", seat=0, action=msgspec.Raw(b"{}"))
    with tracing.within_trace("rules Decide", tracing.CLIENT):
        pass
    assert spans.get_finished_spans() == ()  # no trace under way: a probe's question
    with (
        tracing.span("request", tracing.SERVER),
        tracing.within_trace("rules Decide", tracing.CLIENT),
    ):
        call = api.RulesCall(
            request_id="r", reply_to="replies", request=request, traceparent=tracing.traceparent()
        )
    received = rpc.decode_call(msgspec.json.encode(call))
    with rpc.rules_span(received) as served:
        served.set_attribute("playtable.rules.rejected", "not_your_turn")
    client, _request, worker = spans.get_finished_spans()
    assert worker.name == "rules Decide" and worker.kind == SpanKind.SERVER
    assert worker.parent is not None and worker.parent.span_id == client.context.span_id
    assert worker.context.trace_id == client.context.trace_id
    assert worker.attributes == {
        "playtable.rules.request": "Decide",
        "playtable.game": "hanabi",
        "playtable.rules.rejected": "not_your_turn",
    }
    untraced = api.RulesCall(request_id="r", reply_to="replies", request=api.Ping())
    with rpc.rules_span(untraced) as served:
        assert not served.is_recording()


def test_a_batch_links_to_each_of_its_messages_traces(spans: InMemorySpanExporter) -> None:
    with tracing.span("webhooks dispatch", tracing.CONSUMER, links=[CALLER, None, "junk", CALLER]):
        pass
    (span,) = spans.get_finished_spans()
    assert span.parent is None
    assert [f"{link.context.trace_id:032x}" for link in span.links] == [CALLER.split("-")[1]]


def test_http_spans_continue_the_callers_trace_and_name_the_route(
    spans: InMemorySpanExporter,
) -> None:
    with TestClient(app()) as client:
        answer = client.get("/matches/m1/things/x?token=secret", headers={"traceparent": CALLER})
        assert answer.status_code == 200
        assert client.get("/broken").status_code == 500
        assert client.get("/health").status_code == 200  # probes are not traced
    served, failed = spans.get_finished_spans()
    assert served.name == "GET /matches/{match_id}/things/{name}"
    assert served.kind == SpanKind.SERVER
    assert f"{served.context.trace_id:032x}" == CALLER.split("-")[1]
    assert served.parent is not None and f"{served.parent.span_id:016x}" == CALLER.split("-")[2]
    attributes = dict(served.attributes or {})
    assert attributes.pop("playtable.correlation_id")
    assert attributes == {
        "http.request.method": "GET",
        "http.route": "/matches/{match_id}/things/{name}",
        "http.response.status_code": 200,
        "playtable.match_id": "m1",
    }
    assert failed.name == "GET /broken" and failed.parent is None
    assert failed.status.status_code == StatusCode.ERROR
    assert "secret" not in repr([dict(s.attributes or {}) for s in (served, failed)])
    assert "secret" not in repr([s.status.description for s in (served, failed)])
