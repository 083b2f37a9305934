"""Sending to a feed's client without a task of its own: a send runs as far as it goes at once,
and a send stalled on a slow client is finished later by the follower's own task."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, NamedTuple


class Stalled(NamedTuple):
    """A send stopped at what it awaits (the client reading what was written before)."""

    send: Coroutine[Any, Any, None]
    awaiting: Any


def send_at_once(send: Coroutine[Any, Any, None]) -> Stalled | None:
    """Run a send as far as it goes without waiting: all the way while the client keeps up
    (the server's send writes and returns); else where it stopped, for ``finish``."""
    try:
        awaiting = send.send(None)
    except StopIteration:
        return None
    return Stalled(send, _taken(awaiting))


def _taken(awaiting: Any) -> Any:
    """What a send yielded, taken as a task takes it: a future is then awaited anew (it says
    it is already being awaited until taken)."""
    if getattr(awaiting, "_asyncio_future_blocking", False):
        awaiting._asyncio_future_blocking = False
    return awaiting


async def finish(stalled: Stalled) -> None:
    """Run a stalled send to its end, as the task awaiting it would have."""
    send, awaiting = stalled
    while True:
        try:
            if awaiting is None:  # a bare yield: one turn of the loop
                await asyncio.sleep(0)
            else:
                await awaiting
        except BaseException as error:  # cancelled included: the send hears of it
            try:
                awaiting = _taken(send.throw(error))
            except StopIteration:
                return
            continue
        try:
            awaiting = _taken(send.send(None))
        except StopIteration:
            return
