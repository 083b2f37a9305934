"""Liveness, readiness and metrics routes every service serves."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import Response, get

from shared.edge.contract import problem_responses
from shared.edge.errors import Problem
from shared.infra.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from shared.infra.metrics import Metrics


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
