"""Rate limits (``shared/edge/ratelimit.py``) on a small service, with the real Redis: floods
are refused with a 429 problem and the draft's headers, other clients are not, buckets refill,
an app key is limited across addresses, a client is who a trusted proxy says it is."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import redis.asyncio as redis_async
from litestar.testing import AsyncTestClient

from shared.edge.addresses import client_address, trusted_networks, trusted_proxies
from shared.edge.errors import PROBLEM_MEDIA_TYPE, PROBLEM_TYPE_BASE
from tests.integration.limited_service import CLIENT, OTHER_CLIENT, AppMaker, client_of

pytestmark = pytest.mark.integration


async def post_statuses(client: httpx.AsyncClient, times: int, **options: Any) -> list[int]:
    return [(await client.post("/things", **options)).status_code for _ in range(times)]


@pytest.mark.asyncio
async def test_a_flood_gets_429_with_the_headers_and_a_problem(limited_app: AppMaker) -> None:
    app = await limited_app(rate_limit_write_per_s=5, rate_limit_write_burst=5)
    async with client_of(app) as client:
        answers = [await client.post("/things") for _ in range(7)]
    assert [answer.status_code for answer in answers] == [201] * 5 + [429] * 2
    assert [answer.headers["RateLimit"] for answer in answers[:5]] == [
        f'"write";r={left};t=1' for left in (4, 3, 2, 1, 0)
    ]
    refused = answers[5]
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["RateLimit-Policy"] == '"write";q=5;w=1'
    assert refused.headers["RateLimit"] == '"write";r=0;t=1'
    assert refused.headers["content-type"] == PROBLEM_MEDIA_TYPE
    problem = refused.json()
    assert problem["type"] == PROBLEM_TYPE_BASE + "rate-limited"
    assert (problem["status"], problem["title"], problem["instance"]) == (
        429,
        "Rate limited",
        "/things",
    )


@pytest.mark.asyncio
async def test_a_flood_limits_only_its_client_and_its_class(limited_app: AppMaker) -> None:
    app = await limited_app(
        rate_limit_write_per_s=1,
        rate_limit_write_burst=2,
        rate_limit_read_per_s=10,
        rate_limit_read_burst=30,
    )
    async with client_of(app) as flooder, client_of(app, OTHER_CLIENT) as other:
        assert await post_statuses(flooder, 4) == [201, 201, 429, 429]
        assert await post_statuses(other, 1) == [201]
        reading = await flooder.get("/things")  # reads have their own bucket
        assert reading.status_code == 200
        assert reading.headers["RateLimit-Policy"] == '"read";q=30;w=3'
        assert reading.headers["RateLimit"] == '"read";r=29;t=1'


@pytest.mark.asyncio
async def test_health_and_the_docs_assets_are_never_limited(limited_app: AppMaker) -> None:
    app = await limited_app(rate_limit_read_per_s=1, rate_limit_read_burst=1)
    async with client_of(app) as client:
        health = [await client.get("/health") for _ in range(5)]
        assets = [await client.get("/docs/assets/swagger-ui.css") for _ in range(3)]
        assert (await client.get("/things")).status_code == 200
        assert (await client.get("/nowhere")).status_code == 429  # limited before routing
    assert {answer.status_code for answer in health + assets} == {200}
    assert not any("RateLimit" in answer.headers for answer in health + assets)


@pytest.mark.asyncio
async def test_head_is_refused_without_a_body(limited_app: AppMaker) -> None:
    app = await limited_app(rate_limit_read_per_s=1, rate_limit_read_burst=1)
    async with client_of(app) as client:
        await client.head("/things")
        refused = await client.head("/things")
    assert refused.status_code == 429
    assert refused.content == b""
    assert refused.headers["Retry-After"] == "1"


@pytest.mark.asyncio
async def test_buckets_refill_at_their_rate(limited_app: AppMaker) -> None:
    """A token every 0.5 s: a busy machine may overrun a wait by a few hundred ms, not by the
    half second that would bring a second token (at 20 a second, a 60 ms wait overran by 50
    ms brought two)."""
    app = await limited_app(rate_limit_write_per_s=2, rate_limit_write_burst=2)
    async with client_of(app) as client:
        assert await post_statuses(client, 3) == [201, 201, 429]
        await asyncio.sleep(0.55)  # one token back after 0.5 s
        assert await post_statuses(client, 2) == [201, 429]
        await asyncio.sleep(1.05)  # full again after 1 s
        assert await post_statuses(client, 3) == [201, 201, 429]


@pytest.mark.asyncio
async def test_a_refused_client_is_refused_again_without_asking_redis(
    limited_app: AppMaker, redis: redis_async.Redis, key_prefix: str
) -> None:
    app = await limited_app(rate_limit_write_per_s=1, rate_limit_write_burst=1)
    async with client_of(app) as client:
        assert await post_statuses(client, 2) == [201, 429]
        await redis.delete(f"{key_prefix}{{ratelimit:write}}:addr:{CLIENT}")  # full, for Redis
        again = await client.post("/things")
    assert again.status_code == 429  # no token can be back within the second
    assert again.headers["Retry-After"] == "1"
    assert again.headers["RateLimit"] == '"write";r=0;t=1'


@pytest.mark.asyncio
async def test_an_app_key_is_limited_across_addresses(
    limited_app: AppMaker, redis: redis_async.Redis, key_prefix: str
) -> None:
    app = await limited_app(rate_limit_write_per_s=1, rate_limit_write_burst=3)
    key = {"X-API-Key": "pt_secret_app_key"}
    async with client_of(app, "198.51.100.1") as first, client_of(app, "198.51.100.2") as second:
        assert await post_statuses(first, 3, headers=key) == [201] * 3
        # the key's bucket is empty, the second address's is not
        assert await post_statuses(second, 1, headers=key) == [429]
        assert await post_statuses(second, 1) == [201]
        other_key = {"X-API-Key": "pt_another_app_key"}
        assert await post_statuses(second, 1, headers=other_key) == [201]
    stored = [key async for key in redis.scan_iter(match=f"{key_prefix}{{ratelimit:write}}:key:*")]
    assert len(stored) == 2
    assert not any(b"pt_" in name for name in stored)  # only the keys' hashes are kept


@pytest.mark.asyncio
async def test_a_publishable_key_is_limited_per_address(limited_app: AppMaker) -> None:
    """A publishable key is in every browser of its app: one flooding with it spends only its
    own address's share of the key, and another address with the same key keeps all of its
    budget (with one bucket for the key, the issue saw 27 of 60 left)."""
    app = await limited_app(rate_limit_write_per_s=0.01, rate_limit_write_burst=60)
    key = {"X-API-Key": "pt_pk_a_browsers_key"}
    async with client_of(app, "198.51.100.1") as flooder, client_of(app, "198.51.100.2") as other:
        flooded = await post_statuses(flooder, 100, headers=key)
        assert (flooded.count(201), flooded.count(429)) == (60, 40)
        admitted = (await post_statuses(other, 60, headers=key)).count(201)
        assert admitted == 60
        assert await post_statuses(other, 1, headers=key) == [429]  # its own budget, spent


@pytest.mark.asyncio
async def test_behind_a_trusted_proxy_the_forwarded_client_is_limited(
    limited_app: AppMaker,
) -> None:
    app = await limited_app(
        rate_limit_write_per_s=1, rate_limit_write_burst=1, trusted_proxies="127.0.0.2"
    )
    async with (
        client_of(app, "127.0.0.2") as proxy,
        client_of(app, CLIENT) as direct,
        client_of(app, "127.0.0.1") as local,
    ):
        # the left entry is whatever the client sent; the proxy appended the right one
        spoofed = {"X-Forwarded-For": "10.1.1.1, 198.51.100.7"}
        assert await post_statuses(proxy, 1, headers=spoofed) == [201]
        again = {"X-Forwarded-For": "10.9.9.9, 198.51.100.7"}
        assert await post_statuses(proxy, 1, headers=again) == [429]
        other = {"X-Forwarded-For": "198.51.100.8"}
        assert await post_statuses(proxy, 1, headers=other) == [201]
        # a client that is no trusted proxy cannot pick who it is, on loopback neither
        assert await post_statuses(direct, 2, headers=other) == [201, 429]
        assert await post_statuses(local, 2, headers={"X-Forwarded-For": CLIENT}) == [201, 429]


@pytest.mark.asyncio
async def test_by_default_no_proxy_is_trusted(limited_app: AppMaker) -> None:
    app = await limited_app(rate_limit_write_per_s=1, rate_limit_write_burst=1)
    async with client_of(app, "127.0.0.1") as local:
        forged = [{"X-Forwarded-For": f"198.51.100.{n}"} for n in range(3)]
        assert [await post_statuses(local, 1, headers=each) for each in forged] == [
            [201],
            [429],
            [429],
        ]


@pytest.mark.asyncio
async def test_a_trusted_proxy_may_be_named_by_host_name(limited_app: AppMaker) -> None:
    """As a Compose service or a Kubernetes headless Service names the gateway's copies."""
    app = await limited_app(
        rate_limit_write_per_s=1, rate_limit_write_burst=1, trusted_proxies="localhost"
    )
    async with client_of(app, "127.0.0.1") as proxy:
        for n in range(3):
            headers = {"X-Forwarded-For": f"198.51.100.{n}"}
            assert await post_statuses(proxy, 1, headers=headers) == [201]


def test_trusted_proxies_are_networks_or_host_names() -> None:
    networks, names = trusted_proxies(" 10.1.2.3, gateway-peers , 2001:db8::/64,,")
    assert [str(network) for network in networks] == ["10.1.2.3/32", "2001:db8::/64"]
    assert names == ["gateway-peers"]
    assert trusted_proxies("") == ([], [])
    for bad in ["10.0.0.0/33", "not a name", "-gateway", "10.1.2"]:
        with pytest.raises(SystemExit):
            trusted_proxies(bad)


def test_the_client_address_is_the_rightmost_untrusted_one() -> None:
    trusted = trusted_networks("127.0.0.0/8,::1,10.0.0.0/8")

    def scope(peer: str, forwarded: str | None = None) -> Any:
        headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
        return {"client": (peer, 1), "headers": headers}

    assert client_address(scope("198.51.100.1", "1.2.3.4"), trusted) == "198.51.100.1"
    assert client_address(scope("127.0.0.1"), trusted) == "127.0.0.1"
    assert client_address(scope("127.0.0.1", "1.2.3.4, 5.6.7.8, 10.0.0.2"), trusted) == "5.6.7.8"
    assert client_address(scope("127.0.0.1", "10.0.0.3, 10.0.0.2"), trusted) == "10.0.0.3"
    assert client_address(scope("::ffff:198.51.100.9"), trusted) == "198.51.100.9"
    assert client_address(scope("2001:db8:1:2:3:4:5:6"), trusted) == "2001:db8:1:2::/64"


@pytest.mark.asyncio
async def test_startup_opens_the_limiter_and_shutdown_closes_it(limited_app: AppMaker) -> None:
    app = await limited_app(rate_limit_read_per_s=10, rate_limit_read_burst=10)
    await app.rate_limiter.close()  # the service's own lifespan opens it again
    async with AsyncTestClient(app) as client:
        assert (await client.get("/things")).headers["RateLimit"] == '"read";r=9;t=1'
    async with client_of(app) as client:  # closed: nothing is counted
        assert "RateLimit" not in (await client.get("/things")).headers


@pytest.mark.asyncio
async def test_scripts_lost_by_redis_are_loaded_again(
    limited_app: AppMaker, redis: redis_async.Redis
) -> None:
    app = await limited_app(rate_limit_write_per_s=1, rate_limit_write_burst=2)
    async with client_of(app) as client:
        assert (await client.post("/things")).status_code == 201
        await redis.script_flush()  # as a restarted Redis would have
        counted = await client.post("/things")
        assert counted.headers["RateLimit"] == '"write";r=0;t=2'
        assert (await client.post("/things")).status_code == 429
