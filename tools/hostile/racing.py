"""Racing writers: many clients send a move for one match at the same expected version at
once, released together on connections already open; at most one may be accepted."""

from __future__ import annotations

import asyncio
import random
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp

from tools.traffic import GaveUp, authorization, fetch, json_request, load_policy


@dataclass
class RaceResult:
    version: int
    statuses: list[int]
    bodies: list[Any]
    keys: int
    """How many distinct Idempotency-Keys were sent."""

    @property
    def created(self) -> int:
        return self.statuses.count(201)

    def problem_types(self) -> list[str]:
        return [
            str(body.get("type", "")).rsplit("/", 1)[-1] if isinstance(body, dict) else "?"
            for status, body in zip(self.statuses, self.bodies, strict=True)
            if status != 201
        ]


async def race_round(
    session: aiohttp.ClientSession,
    match_urls: list[str],
    match_id: str,
    tokens: list[str],
    rng: random.Random,
    *,
    clients: int = 20,
    same_key: bool = False,
    seats: list[int] | None = None,
) -> RaceResult | None:
    """``clients`` requests at one expected version, released together.

    ``seats``: who sends (client i as ``seats[i % len]``); by default one seat to move for
    all. ``same_key``: one key and body for every client (a retry storm), else each its own
    key and a random legal action. None if the match is over.
    """

    async def read(url: str, headers: dict[str, str] | None = None) -> Any:
        reply = await fetch(session, "GET", url, headers=headers)
        if reply.status != 200:
            raise GaveUp(f"GET {url}: {reply.status} {reply.text[:300]}")
        return reply.json()

    info = await read(f"{match_urls[0]}/matches/{match_id}")
    if info["status"] != "running" or not info["to_move"]:
        return None
    version = info["version"]
    senders = seats or [rng.choice(info["to_move"])]
    legal: dict[int, list[Any]] = {}
    for seat in set(senders):
        listed = await read(
            f"{match_urls[0]}/matches/{match_id}/actions", authorization(tokens[seat])
        )
        if listed["version"] != version:
            return await race_round(
                session,
                match_urls,
                match_id,
                tokens,
                rng,
                clients=clients,
                same_key=same_key,
                seats=seats,
            )
        legal[seat] = listed["actions"]
    shared_key = uuid.uuid4().hex
    shared_seat = senders[0]
    shared_action = load_policy(rng, legal[shared_seat])
    requests = []
    for index in range(clients):
        seat = shared_seat if same_key else senders[index % len(senders)]
        action = shared_action if same_key else load_policy(rng, legal[seat])
        key = shared_key if same_key else uuid.uuid4().hex
        url = f"{match_urls[index % len(match_urls)]}/matches/{match_id}/actions"
        headers = {**authorization(tokens[seat]), "Idempotency-Key": key}
        body = {"game": info["game"], "expected_version": version, "action": action}
        requests.append((url, *json_request(body, headers)))
    go = asyncio.Event()

    async def send(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
        await go.wait()
        reply = await fetch(session, "POST", url, body=body, headers=headers)
        try:
            return reply.status, reply.json()
        except ValueError:
            return reply.status, reply.text

    tasks = [asyncio.create_task(send(*request)) for request in requests]
    await asyncio.sleep(0)  # every task waits at the barrier
    go.set()
    answers = await asyncio.gather(*tasks)
    keys = 1 if same_key else clients
    return RaceResult(version, [a[0] for a in answers], [a[1] for a in answers], keys)


async def warm_connections(session: aiohttp.ClientSession, urls: list[str], count: int) -> None:
    """Open ``count`` keep-alive connections to each URL so that racing requests leave at once."""
    health = [f"{url}/health" for url in urls for _ in range(count)]
    await asyncio.gather(*(fetch(session, "GET", url) for url in health))
