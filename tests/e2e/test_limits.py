"""Rate limits and live-feed limits on the running services (low limits, set for this module):
a flood is refused with 429 and the draft's headers and changes nothing; a client holds no
more live feeds than allowed, and a closed one frees its slot."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import Stack
from tests.e2e.play import open_table

pytestmark = pytest.mark.e2e

WRITES_PER_S = 2
WRITE_BURST = 4
FEEDS = 2


@pytest.fixture(scope="module", autouse=True)
def low_limits() -> Iterator[None]:
    """Set before the module's stack starts (autouse fixtures come first in their scope)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PLAYTABLE_RATE_LIMIT_WRITE_PER_S", str(WRITES_PER_S))
        env.setenv("PLAYTABLE_RATE_LIMIT_WRITE_BURST", str(WRITE_BURST))
        env.setenv("PLAYTABLE_MAX_FEEDS_PER_CLIENT", str(FEEDS))
        yield


def test_a_flood_of_writes_is_refused_and_changes_nothing(stack: Stack) -> None:
    before = len(stack.lobby.get("/tables", params={"limit": 200}).json()["items"])
    answers = [stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}) for _ in range(12)]
    created = [answer for answer in answers if answer.status_code == 201]
    refused = [answer for answer in answers if answer.status_code == 429]
    assert len(created) + len(refused) == len(answers)
    assert WRITE_BURST <= len(created) <= WRITE_BURST + 2 and refused  # 2/s refill meanwhile
    problem = refused[0]
    assert problem.headers["content-type"] == "application/problem+json"
    assert problem.json()["type"].endswith("/rate-limited")
    assert int(problem.headers["Retry-After"]) >= 1
    assert problem.headers["RateLimit-Policy"] == f'"write";q={WRITE_BURST};w=2'
    assert problem.headers["RateLimit"].startswith('"write";r=0;t=')
    assert created[0].headers["RateLimit"].startswith('"write";r=')
    after = len(stack.lobby.get("/tables", params={"limit": 200}).json()["items"])
    assert after - before == len(created)  # the refused ones made no table


def test_a_client_holds_no_more_live_feeds_than_allowed(stack: Stack) -> None:
    time.sleep(WRITE_BURST / WRITES_PER_S)  # the writes' bucket full again: four to open a table
    match_id, _tokens = open_table(stack, "hanabi", 2, seed=4)
    path = f"{stack.match.base_url}/matches/{match_id}/feed"
    with contextlib.ExitStack() as open_feeds, httpx.Client(timeout=10) as client:
        held = [open_feeds.enter_context(client.stream("GET", path)) for _ in range(FEEDS)]
        assert [feed.status_code for feed in held] == [200] * FEEDS
        refused = client.get(path)
        assert refused.status_code == 429, refused.text
        policies = refused.headers["RateLimit-Policy"].split(", ")  # with the feeds' rate
        assert f'"live-feeds";q={FEEDS};qu="concurrent-requests"' in policies
        held[0].close()
        for _ in range(50):  # the server frees the slot once it sees the client gone
            with client.stream("GET", path) as again:
                if again.status_code == 200:
                    break
        assert again.status_code == 200
