"""The collector's settings for service processes (``shared/collector.py``)."""

from __future__ import annotations

import gc

from shared import collector


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
