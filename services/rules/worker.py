"""The rules service: a member of the rules request stream's group that answers with the engines."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
from opentelemetry.trace import Span

from services.rules.engine import RulesEngine, UnknownGame
from services.rules.games.registry import GAMES
from shared.domain.messages import now_ms
from shared.domain.rules_api import Rejected, RulesCall
from shared.infra import rpc, tracing
from shared.infra.bus import redis_client
from shared.infra.collector import tune_collector
from shared.infra.logs import log_context
from shared.infra.metrics import Metrics, serve_metrics, streams_probe
from shared.infra.readiness import ReadyChecks
from shared.infra.settings import Settings
from shared.infra.streams import RULES_REQUESTS_STREAM

log = logging.getLogger(__name__)

RULES_GROUP = "rules"


class RulesWorker:
    """Answers each request it is handed; failures reach the caller as errors, not silence."""

    def __init__(self, engine: RulesEngine) -> None:
        self.engine = engine

    def answer(self, payload: bytes) -> rpc.Reply | None:
        """The reply to a request and where it goes; none if its caller gave up waiting
        (answering would only fill its stream) or it is no request (no one to answer)."""
        try:
            call = rpc.decode_call(payload)
        except msgspec.DecodeError as error:
            log.warning(
                "dropped an entry of the rules request stream that is no request: %s", error
            )
            return None
        if call.deadline_ms and now_ms() > call.deadline_ms:
            return None
        with log_context(correlation_id=call.correlation_id or None), rpc.rules_span(call) as span:
            return call.reply_to, self._reply(call, span)

    def _reply(self, call: RulesCall, span: Span) -> bytes:
        outcome: Any = None
        try:
            outcome = self.engine.handle(call.request)
            reply = rpc.encode_reply(call.request_id, outcome)
        except UnknownGame as error:
            outcome = Rejected("unknown_game", f"no game named {error.args[0]!r}")
            reply = rpc.encode_reply(call.request_id, outcome)
        except Exception as error:
            log.exception("rules request %s failed", type(call.request).__name__)
            tracing.failed(span, type(error).__name__)
            reply = rpc.encode_failure(call.request_id, "the rules engine failed on this request")
        if isinstance(outcome, Rejected):
            span.set_attribute("playtable.rules.rejected", outcome.code)
        return reply


async def serve(settings: Settings, stop: asyncio.Event) -> None:
    """Bootstrap: connect, build the engine from the game catalogue, consume until stopped."""
    tracing.configure(settings, "rules")
    redis = redis_client(settings)
    worker = RulesWorker(RulesEngine(GAMES))
    tune_collector()
    stream = settings.stream(RULES_REQUESTS_STREAM)
    # The group is made by the first read that finds it missing: Redis may not answer yet.
    responder = rpc.Responder(
        redis,
        stream,
        RULES_GROUP,
        settings.instance_id,
        worker.answer,
        dead_after_ms=settings.dead_consumer_after_ms,
    )
    groups = [(RULES_REQUESTS_STREAM, RULES_GROUP)]
    metrics = Metrics({"streams": streams_probe(lambda: redis, settings.stream_prefix, groups)})
    exporter = None
    if settings.metrics_port:
        ready = ReadyChecks({"redis": redis.ping})
        exporter = await serve_metrics(metrics, settings.host, settings.metrics_port, ready.failed)
    log.info("rules worker %s consuming %s", settings.instance_id, stream)
    try:
        await responder.run(stop)
    finally:
        if exporter is not None:
            await exporter.cleanup()
        await redis.aclose()
