"""The malformed requests sent (``barrage``), each written byte for byte on a socket of its
own, and what the answers come to (``summarize_barrage``)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tools.hostile.malformed import HostileRequest, Known, hostile_requests
from tools.traffic import Endpoints

PROBLEM_JSON = "application/problem+json"


@dataclass
class BarrageAnswer:
    request: HostileRequest
    status: int
    content_type: str
    body: str

    @property
    def acceptable(self) -> bool:
        expected = self.request.refused_with
        status_right = self.status == expected if expected else 400 <= self.status < 500
        return status_right and self.content_type.startswith(PROBLEM_JSON)


async def send_hostile(
    endpoints: Endpoints, request: HostileRequest, timeout: float = 10.0
) -> BarrageAnswer:
    """One malformed request, written byte for byte on a connection of its own: aiohttp would
    write header values as UTF-8 (``\\xff`` as two bytes) and add headers of its own. Feeds
    are closed after the headers (a refusal has a body)."""
    base = urlsplit(endpoints.lobby if request.service == "lobby" else endpoints.match())
    body = request.content or b""
    head = f"{request.method} {request.path} HTTP/1.1\r\nHost: {base.netloc}\r\n".encode()
    head += b"".join(name.encode() + b": " + value + b"\r\n" for name, value in request.headers)
    if request.content is not None or request.method == "POST":  # a GET or DELETE has none
        head += b"Content-Length: %d\r\n" % len(body)
    head += b"Connection: close\r\n\r\n"
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(base.hostname, base.port)
            try:
                writer.write(head + body)
                status_line = await reader.readline()
                content_type = ""
                while (line := await reader.readline()).strip():
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-type":
                        content_type = value.strip().decode("latin-1")
                streamed = content_type.startswith("text/event-stream")
                text = "" if streamed else (await reader.read()).decode("utf-8", "replace")[:500]
            finally:
                writer.close()
    except (OSError, TimeoutError) as error:
        return BarrageAnswer(request, 0, "", f"{type(error).__name__}: {error}")
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return BarrageAnswer(request, 0, "", f"no status line: {status_line[:100]!r}")
    return BarrageAnswer(request, int(parts[1]), content_type, text)


async def barrage(
    endpoints: Endpoints,
    known: Known,
    requests: int,
    *,
    concurrency: int = 8,
    seed: int = 1,
    timeout: float = 10.0,
) -> list[BarrageAnswer]:
    """``requests`` malformed requests, ``concurrency`` at a time; every answer."""
    generator = hostile_requests(random.Random(seed), known)
    answers: list[BarrageAnswer] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            answers.append(await send_hostile(endpoints, next(generator), timeout))

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answers


def summarize_barrage(answers: list[BarrageAnswer]) -> dict[str, Any]:
    by_status = Counter(answer.status for answer in answers)
    bad = [answer for answer in answers if not answer.acceptable]
    return {
        "requests": len(answers),
        "5xx": sum(count for status, count in by_status.items() if status >= 500),
        "transport_errors": by_status.get(0, 0),
        "not_4xx_problem": len(bad),
        "by_status": dict(sorted(by_status.items())),
        "labels_5xx": dict(Counter(a.request.label for a in answers if a.status >= 500)),
        "labels_not_problem": dict(Counter(a.request.label for a in bad)),
    }
