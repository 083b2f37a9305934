"""Readiness of a process without HTTP: ``/ready`` on its metrics port says what does not
answer, as the HTTP services' ``/ready`` does."""

from __future__ import annotations

import asyncio

import pytest

from shared.infra import readiness
from shared.infra.metrics import Metrics, serve_metrics
from shared.infra.readiness import ReadyChecks
from tools.scratch import LOOPBACK, free_port


async def _get(port: int, path: str) -> tuple[str, str]:
    reader, writer = await asyncio.open_connection(LOOPBACK, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    answer = (await reader.read()).decode()
    writer.close()
    head, body = answer.split("\r\n\r\n", 1)
    return head.split("\r\n", 1)[0], body


@pytest.mark.asyncio
async def test_the_metrics_port_says_whether_the_process_is_ready(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(readiness, "READY_KEPT_S", 0.0)  # each /ready asks again
    redis_down = asyncio.Event()

    async def redis() -> None:
        if redis_down.is_set():
            raise ConnectionError("refused")

    checks = ReadyChecks({"redis": redis})
    port = free_port()
    exporter = await serve_metrics(Metrics({}), LOOPBACK, port, checks.failed)
    try:
        assert await _get(port, "/ready") == ("HTTP/1.1 200 OK", "ready\n")
        redis_down.set()
        assert await _get(port, "/ready") == (
            "HTTP/1.1 503 Service Unavailable",
            "redis did not answer (ConnectionError)\n",
        )
        assert (await _get(port, "/metrics"))[0] == "HTTP/1.1 200 OK"
    finally:
        await exporter.cleanup()
