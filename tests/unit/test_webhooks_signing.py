"""Webhook signatures verify with the ``standardwebhooks`` library; targets and backoff."""

from __future__ import annotations

import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from services.webhooks.delivery import backoff_s, retry_after_s
from services.webhooks.signing import new_secret, signed_headers
from services.webhooks.targets import TargetRefused, allowed_networks, check_target
from shared.settings import Settings


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
    ],
)
def test_internal_targets_are_refused(url: str) -> None:
    with pytest.raises(TargetRefused):
        check_target(url, [])


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
