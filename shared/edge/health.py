"""Liveness, readiness and metrics routes every service serves."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Response, get

from shared.edge.contract import problem_responses
from shared.edge.errors import Problem
from shared.infra.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from shared.infra.metrics import Metrics
from shared.infra.readiness import ReadyChecks


class Health(msgspec.Struct):
    service: str
    status: str
    instance: str


class Readiness(msgspec.Struct):
    service: str
    status: str
    instance: str
    checked: list[str]
    """The dependencies that answered: all of the service's."""


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
