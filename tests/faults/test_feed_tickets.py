"""Feed tickets live in Redis, for every copy of the match service: with Redis down none is given
(503, as by every Redis-backed feature), and a wiped Redis (a restart without persistence) has
lost them, so a browser holding one is told to get a new one (401), which opens the feed."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest

from shared.edge.apps import API_KEY_HEADER
from tests.e2e.play import auth
from tests.faults.conftest import FaultStack

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]


def answered(call: Callable[[], httpx.Response]) -> httpx.Response:
    """The first answer that is not a 503 (a client retries those after their Retry-After, as
    each service reconnects to a Redis that came back)."""
    deadline = time.monotonic() + 30
    while (answer := call()).status_code == 503 and time.monotonic() < deadline:
        time.sleep(float(answer.headers.get("Retry-After", "1")))
    return answer


def test_feed_tickets_through_a_redis_outage_and_a_wipe(make_stack) -> None:
    stack: FaultStack = make_stack(match_processes=2)
    key = {API_KEY_HEADER: stack.app_key}
    with (
        httpx.Client(base_url=stack.lobby_url, headers=key, timeout=10, trust_env=False) as lobby,
        httpx.Client(base_url=stack.match_url(), timeout=10, trust_env=False) as first,
        httpx.Client(base_url=stack.match_url("match-2"), timeout=10, trust_env=False) as second,
    ):
        table_id = lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()["table_id"]
        token = lobby.post(f"/tables/{table_id}/seats", json={"name": "ada"}).json()["token"]
        lobby.post(f"/tables/{table_id}/seats", json={"name": "bob"})
        started = lobby.post(f"/tables/{table_id}/start", headers=auth(token))
        assert started.status_code == 201, started.text
        feed = f"/matches/{started.json()['match_id']}/feed"

        def ticket() -> httpx.Response:
            return first.post(f"{feed}-tickets", headers=auth(token))

        kept = answered(ticket)
        assert kept.status_code == 201, kept.text

        stack.redis.kill()
        down = ticket()
        assert down.status_code == 503, down.text
        assert down.json()["type"].endswith("/service-unavailable")

        stack.redis.start()  # empty: the ticket given before is gone
        lost = answered(lambda: second.get(feed, params={"ticket": kept.json()["ticket"]}))
        assert lost.status_code == 401, lost.text
        assert lost.json()["type"].endswith("/feed-ticket-refused")

        fresh = answered(ticket)  # given by one copy, redeemed by the other
        assert fresh.status_code == 201, fresh.text
        with second.stream("GET", feed, params={"ticket": fresh.json()["ticket"]}) as opened:
            assert opened.status_code == 200, opened.read()
            assert next(opened.iter_lines()).startswith("retry:")
