"""Commands carried out side by side: one subject's in order, at most a limit at once."""

from __future__ import annotations

import asyncio

import pytest

from shared.infra.commands import BySubject

pytestmark = pytest.mark.asyncio


async def test_one_subjects_commands_take_turns_and_the_others_run_beside_them() -> None:
    by_subject = BySubject(limit=2)
    running: set[str] = set()
    most = 0
    order: list[str] = []
    release = asyncio.Event()

    async def command(subject: str, name: str) -> None:
        nonlocal most
        async with by_subject.turn(subject):
            running.add(name)
            most = max(most, len(running))
            order.append(name)
            await release.wait()
            running.discard(name)

    tasks = [
        asyncio.create_task(command(subject, name))
        for subject, name in [("m1", "a"), ("m1", "b"), ("m2", "c"), ("m3", "d")]
    ]
    while len(running) < 2:
        await asyncio.sleep(0)
    assert running == {"a", "c"}  # b waits for a (same match), d for the limit
    release.set()
    await asyncio.gather(*tasks)
    assert most == 2 and order.index("a") < order.index("b")
    assert not by_subject._turns  # nothing kept once every turn ended
