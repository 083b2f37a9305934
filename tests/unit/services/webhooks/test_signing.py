"""Webhook signatures verify with the ``standardwebhooks`` library; targets (the SSRF guard),
how deliveries reach them and log failures; backoff."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time

import aiohttp
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from services.webhooks.attempts import (
    backoff_s,
    coarse_error,
    pinned_post,
    retry_after_s,
)
from services.webhooks.signing import new_secret, signed_headers
from services.webhooks.targets import (
    Target,
    TargetRefused,
    allowed_networks,
    check_target,
    reachable,
)
from shared.infra.settings import Settings


def test_signatures_verify_with_every_signing_secret_and_not_others() -> None:
    old, new = new_secret(), new_secret()
    body = b'{"type":"CardPlayed"}'
    fresh = signed_headers([new, old], "match-1:3:CardPlayed", int(time.time()), body)
    assert Webhook(old).verify(body, fresh) == {"type": "CardPlayed"}
    assert Webhook(new).verify(body, fresh) == {"type": "CardPlayed"}
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, fresh)
    with pytest.raises(WebhookVerificationError):
        Webhook(new).verify(body + b" ", fresh)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://224.0.0.1/",
        "ftp://example.com/",
        "http:///nohost",
        "http://[",
    ],
)
def test_internal_targets_are_refused(url: str) -> None:
    with pytest.raises(TargetRefused):
        check_target(url, [])


def test_a_refusal_names_no_address_and_the_log_does(caplog: pytest.LogCaptureFixture) -> None:
    """Told to the caller, the address would answer DNS queries for internal names."""
    caplog.set_level(logging.INFO, logger="services.webhooks.targets")
    with pytest.raises(TargetRefused) as refused:
        check_target("http://localhost:9/hook", [])
    addresses = {info[4][0] for info in socket.getaddrinfo("localhost", 9)}
    assert "private, loopback" in str(refused.value)
    assert not any(address in str(refused.value) for address in addresses)
    assert any(address in caplog.text for address in addresses)


def test_allowed_networks_admit_their_addresses_only() -> None:
    allowed = allowed_networks("127.0.0.0/8, ::1")
    check_target("http://127.0.0.1:9/", allowed)
    check_target("http://[::1]:9/", allowed)
    with pytest.raises(TargetRefused):
        check_target("http://10.0.0.1/", allowed)


def test_backoff_doubles_honours_retry_after_and_is_bounded() -> None:
    settings = Settings(webhook_retry_base_s=2.0, webhook_retry_max_s=60.0)
    assert [backoff_s(settings, n, None) for n in (1, 2, 3, 6, 9)] == [2, 4, 8, 60, 60]
    assert backoff_s(settings, 1, 30.0) == 30.0
    assert backoff_s(settings, 1, 3600.0) == 60.0
    assert retry_after_s("120") == 120.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_s("soon") is None and retry_after_s(None) is None


@pytest.mark.parametrize(
    "address",
    [
        "100.100.100.200",  # shared address space (a cloud metadata address)
        "100.64.0.1",
        "198.18.0.1",  # benchmarking
        "192.0.0.1",
        "192.0.2.1",  # documentation
        "240.0.0.1",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "::ffff:127.0.0.1",
        "fec0::1",  # site-local
        "ff02::1",
    ],
)
def test_special_purpose_addresses_are_not_reachable(address: str) -> None:
    assert not reachable(ipaddress.ip_address(address), [])
    with pytest.raises(TargetRefused):
        check_target(f"http://{address}/" if ":" not in address else f"http://[{address}]/", [])


def test_global_addresses_are_reachable_and_the_checked_one_is_kept() -> None:
    for address in ("8.8.8.8", "2606:4700::1111"):
        assert reachable(ipaddress.ip_address(address), [])
    target = check_target("https://user:pw@8.8.8.8:8443/hook?x=1", [])
    assert (target.host, str(target.address)) == ("8.8.8.8", "8.8.8.8")


def test_a_delivery_connects_to_the_checked_address_naming_the_host() -> None:
    target = Target(
        "https://hooks.example:8443/in?x=1", "hooks.example", ipaddress.ip_address("8.8.4.4")
    )
    post = pinned_post(target, {"webhook-id": "m1"})
    assert post.url.host == "8.8.4.4" and post.url.port == 8443
    assert post.url.path == "/in" and post.url.query_string == "x=1"
    assert post.headers == {"webhook-id": "m1", "Host": "hooks.example:8443"}
    assert post.server_hostname == "hooks.example"  # TLS's SNI and certificate check
    plain = Target("http://hooks.example/in", "hooks.example", ipaddress.ip_address("8.8.4.4"))
    assert pinned_post(plain, {}).headers["Host"] == "hooks.example"
    assert pinned_post(plain, {}).server_hostname is None


def test_failures_are_logged_coarsely() -> None:
    with socket.socket() as closed:  # a loopback port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    async def refused() -> BaseException:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientError) as raised:
                await session.post(f"http://127.0.0.1:{port}/")
        return raised.value

    assert coarse_error(asyncio.run(refused())) == "could not connect"
    assert coarse_error(TimeoutError()) == "timeout"
    assert coarse_error(aiohttp.ServerTimeoutError("10.0.0.9 timed out")) == "timeout"
    assert coarse_error(aiohttp.ServerDisconnectedError()) == "connection dropped"
    assert coarse_error(aiohttp.ClientPayloadError("10.0.0.9 cut it short")) == "network error"
