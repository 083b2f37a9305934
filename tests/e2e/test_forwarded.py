"""Who a request comes from (``X-Forwarded-For``), on ``playtable stack`` with low read and
feed limits: a client that sends the header straight to a service's port cannot pick who it
is (only the stack's gateway is trusted), and behind the gateway each client still has its
own buckets. Every client here connects from a loopback address of its own."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import Gateway
from tests.e2e.play import open_table

pytestmark = pytest.mark.e2e

READS_PER_S = 5
READ_BURST = 50
FEEDS = 20


@pytest.fixture(scope="module", autouse=True)
def low_limits() -> Iterator[None]:
    """Set before the module's stack starts (autouse fixtures come first in their scope)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PLAYTABLE_RATE_LIMIT_READ_PER_S", str(READS_PER_S))
        env.setenv("PLAYTABLE_RATE_LIMIT_READ_BURST", str(READ_BURST))
        env.setenv("PLAYTABLE_MAX_FEEDS_PER_CLIENT", str(FEEDS))
        yield


def client_from(address: str, base_url: str) -> httpx.Client:
    """A client whose connections come from ``address`` (Linux routes 127.0.0.0/8 to lo)."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=base_url, transport=transport, timeout=10)


def admitted_reads(client: httpx.Client, times: int, forge: bool) -> tuple[int, float]:
    """Keyless reads, each with its own ``X-Forwarded-For`` if ``forge``: how many were
    answered 200, and how long they took."""
    started = time.monotonic()
    statuses = [
        client.get(
            "/games", headers={"X-Forwarded-For": f"198.51.100.{n % 250}"} if forge else {}
        ).status_code
        for n in range(times)
    ]
    assert set(statuses) <= {200, 429}
    return statuses.count(200), time.monotonic() - started


def reads_until_refused(client: httpx.Client, most: int) -> tuple[int, float]:
    """Keyless reads, each forging its own ``X-Forwarded-For``, until one is refused (429) or
    ``most`` were sent: how many were answered 200 before, and how long they took."""
    started = time.monotonic()
    admitted = 0
    for n in range(most):
        forged = {"X-Forwarded-For": f"198.51.100.{n % 250}"}
        status = client.get("/games", headers=forged).status_code
        assert status in (200, 429)
        if status == 429:
            return admitted, time.monotonic() - started
        admitted += 1
    raise AssertionError(f"{most} reads, none refused: the bucket never emptied")


def within_limits(admitted: int, elapsed: float) -> bool:
    """A bucket's bound: its size, its refill meanwhile, and a process's held tokens' second."""
    return admitted <= READ_BURST + READS_PER_S * (elapsed + 1)


@pytest.mark.parametrize("forger_address", ["127.0.0.5", "127.0.0.1"])
def test_a_forged_forwarded_for_straight_at_a_service_picks_no_new_client(
    gateway: Gateway, forger_address: str
) -> None:
    """From 127.0.0.1 too, which uvicorn's own proxy headers would trust (the services leave
    ``X-Forwarded-For`` to ``PLAYTABLE_TRUSTED_PROXIES`` alone)."""
    lobby = f"http://127.0.0.1:{gateway.stack.env['PLAYTABLE_LOBBY_PORT']}"
    with (
        client_from(forger_address, lobby) as forger,
        client_from("127.0.0.6", lobby) as plain,
    ):
        forged, forged_s = admitted_reads(forger, 300, forge=True)
        honest, honest_s = admitted_reads(plain, 300, forge=False)
    print(f"forged X-Forwarded-For: {forged} of 300 admitted; without: {honest} of 300")
    assert within_limits(honest, honest_s)
    assert within_limits(forged, forged_s), f"{forged} of 300 forged reads admitted"


def test_a_forged_forwarded_for_holds_no_more_live_feeds(gateway: Gateway) -> None:
    # the table is opened from an address of its own: the tests before emptied 127.0.0.1's
    # read bucket, which refills at 5 a second, fewer than opening a table reads on a busy
    # machine (it polls for the match meanwhile)
    with client_from("127.0.0.8", str(gateway.client.base_url)) as opener:
        opener.headers.update(gateway.client.headers)
        stack = dataclasses.replace(gateway.stack, lobby=opener, match=opener)
        match_id, _tokens = open_table(stack, "hanabi", 2, seed=31)
    match = f"http://127.0.0.1:{gateway.stack.env['PLAYTABLE_MATCH_PORT']}"
    path = f"/matches/{match_id}/feed"
    with contextlib.ExitStack() as open_feeds, client_from("127.0.0.7", match) as forger:
        statuses = []
        for n in range(3 * FEEDS):
            forged = {"X-Forwarded-For": f"198.51.100.{n}"}
            feed = open_feeds.enter_context(forger.stream("GET", path, headers=forged))
            statuses.append(feed.status_code)
    print(f"{statuses.count(200)} of {3 * FEEDS} forged feeds opened (cap {FEEDS})")
    assert statuses.count(200) == FEEDS
    assert statuses.count(429) == 2 * FEEDS


def test_behind_the_gateway_each_client_has_its_own_buckets(gateway: Gateway) -> None:
    """The gateway appends the address it was reached from: one client emptying its bucket
    (forging the header too) leaves another its own."""
    base = str(gateway.client.base_url)
    with client_from("127.0.0.3", base) as first, client_from("127.0.0.4", base) as second:
        # refused before long: how soon, by the bucket's bound over the time it took (more
        # reads get through on a slow machine, as the bucket refills meanwhile)
        admitted, elapsed = reads_until_refused(first, 20 * READ_BURST)
        assert within_limits(admitted, elapsed), (admitted, elapsed)
        answer = second.get("/games")
        assert answer.status_code == 200, answer.text
