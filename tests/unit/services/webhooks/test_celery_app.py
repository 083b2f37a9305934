"""The webhook worker's broker connection: lost, it is tried again every half second."""

from __future__ import annotations

import pytest
from kombu.exceptions import OperationalError

from services.webhooks.celery_app import RECONNECT_S, celery_app


def test_a_worker_that_lost_redis_tries_it_again_every_half_second() -> None:
    """As the worker's consumer asks (kombu's own waits grow to 30 s); nothing listens on the
    port asked."""
    waits: list[float] = []
    with celery_app.connection_for_read(url="redis://127.0.0.1:1/0") as connection:
        with pytest.raises(OperationalError):
            connection.ensure_connection(lambda _error, wait: waits.append(wait), 3)
    assert waits == [0, RECONNECT_S, RECONNECT_S] and RECONNECT_S == 0.5
