"""The collector's settings for service processes (``shared/infra/collector.py``)."""

from __future__ import annotations

import asyncio
import gc
import time

import pytest

from shared.infra import collector
from tests.waiting import await_until


def test_tuning_sets_the_thresholds_once_and_freezes_what_exists() -> None:
    collector.tune_collector()
    assert gc.get_threshold() == (
        collector.YOUNG_THRESHOLD,
        collector.MIDDLE_THRESHOLD,
        collector.OLD_THRESHOLD,
    )
    frozen = gc.get_freeze_count()
    assert frozen > 0
    collector.tune_collector()  # a second service's startup in the process: nothing more
    assert gc.get_freeze_count() == frozen


def test_free_memory_can_be_given_back_at_any_time() -> None:
    collector.return_free_memory()
    collector.return_free_memory()


@pytest.mark.asyncio
async def test_memory_goes_back_once_enough_closed_and_none_for_a_moment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trims: list[float] = []
    monkeypatch.setattr(collector, "return_free_memory", lambda: trims.append(time.monotonic()))
    quiet_s = 0.25  # the sleeps below stay well short of it, or well past it: a busy loop
    closes = collector.MemoryReturn(after=3, quiet_s=quiet_s)
    closes.count()
    closes.count()
    await asyncio.sleep(quiet_s + 0.05)  # past a quiet moment (the point: too few closed)
    assert trims == []  # too few closed
    closes.count()
    await asyncio.sleep(0.05)
    last_close = time.monotonic()
    closes.count()  # still closing: the trim waits
    await asyncio.sleep(0.05)
    assert trims == []
    await await_until(lambda: trims, poll=0.01, what="the trim after a quiet moment")
    assert len(trims) == 1
    assert trims[0] - last_close >= quiet_s
    closes.count()  # counting starts again
    await asyncio.sleep(quiet_s + 0.05)  # past a quiet moment (the point: one closed only)
    assert len(trims) == 1
