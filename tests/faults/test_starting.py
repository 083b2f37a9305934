"""Every process of the stack started while Redis, or Postgres, is down: none exits, each says
it is not ready (``/ready``: the HTTP services' own, the metrics port's of the others) for as
long as the server is down, and once it answers every one becomes ready without a restart and
a match of bots is played to its end."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import httpx
import pytest

from shared.edge.apps import API_KEY_HEADER
from tests.faults.conftest import FaultStack
from tests.faults.services import EVERY_SERVICE, start_services
from tests.waiting import wait_until

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

DOWN_S = 7.0
"""How long the server stays down after the processes started: those that gave up on it
exited within 6 s."""
HEURISTIC = "hanabi-heuristic"


def _status(client: httpx.Client, url: str) -> int | None:
    """``/ready``'s status; None while nothing answers on its port."""
    with contextlib.suppress(httpx.TransportError):
        return client.get(url).status_code
    return None


def _exited(stack: FaultStack) -> list[str]:
    return [
        f"{name} exited ({process.returncode}): {stack.log_tail(name, 800)}"
        for name, process in stack.processes.items()
        if process.poll() is not None
    ]


def _bots_match_played(stack: FaultStack, client: httpx.Client) -> None:
    created = client.post(
        f"{stack.lobby_url}/tables",
        json={
            "game": "hanabi",
            "seats": 2,
            "bots": [{"bot": HEURISTIC, "seat": seat} for seat in (0, 1)],
        },
    )
    assert created.status_code == 201, created.text
    match_url = f"{stack.match_url()}/matches/{created.json()['match_id']}"

    def finished() -> bool:
        answer = client.get(match_url)
        return answer.status_code == 200 and answer.json()["status"] == "finished"

    wait_until(finished, timeout=90, poll=0.2, what="the bots' match played to its end")


@pytest.mark.parametrize("down", ["redis", "postgres"])
def test_every_service_starts_while_a_server_is_down(
    down: str, make_stack: Callable[..., FaultStack]
) -> None:
    stack = make_stack()
    stop, start = (
        (stack.redis.kill, stack.redis.start)
        if down == "redis"
        else (stack.cluster.stop_immediate, stack.cluster.start)
    )
    stop()
    stack.stop_all()
    ready = start_services(stack, EVERY_SERVICE)
    began = time.monotonic()
    # Those that need the server say so (the rules worker needs no Postgres; the webhooks
    # process serves its port once Postgres answered).
    needing = [name for name in ready if not (down == "postgres" and name in ("rules", "webhooks"))]
    with httpx.Client(timeout=3, trust_env=False) as client:
        wait_until(
            lambda: _exited(stack) or all(_status(client, ready[name]) == 503 for name in needing),
            timeout=60,
            poll=0.2,
            what=f"every process saying it is not ready while {down} is down",
        )
        assert not _exited(stack)
        # not ready still, for as long as it is down: a sleep, since nothing happens meanwhile
        time.sleep(max(0.0, began + DOWN_S - time.monotonic()))
        assert not _exited(stack)
        assert [_status(client, ready[name]) for name in needing] == [503] * len(needing)
        start()
        wait_until(
            lambda: _exited(stack) or all(_status(client, url) == 200 for url in ready.values()),
            timeout=60,
            poll=0.2,
            what=f"every process ready once {down} answers",
        )
        assert not _exited(stack)
        client.headers[API_KEY_HEADER] = stack.app_key
        _bots_match_played(stack, client)
