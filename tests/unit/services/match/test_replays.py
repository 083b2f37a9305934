"""The memory of shown versions stays within its byte budget, dropping the least recent."""

from __future__ import annotations

from services.match.replays import ShownVersions


def test_least_recently_shown_versions_go_first_when_over_budget() -> None:
    shown = ShownVersions(max_bytes=30)
    for version in (1, 2, 3):
        shown.put(("m", version, None, False), b"x" * 10)
    assert shown.get(("m", 1, None, False)) == b"x" * 10  # now the most recent
    shown.put(("m", 4, 0, False), b"y" * 10)
    assert shown.get(("m", 2, None, False)) is None
    assert shown.get(("m", 1, None, False)) is not None
    assert shown.get(("m", 4, 0, False)) == b"y" * 10
    assert shown.size == 30


def test_a_reply_larger_than_the_budget_is_not_kept() -> None:
    shown = ShownVersions(max_bytes=5)
    shown.put(("m", 1, None, True), b"z" * 6)
    assert shown.get(("m", 1, None, True)) is None
    assert shown.size == 0


def test_putting_a_version_again_counts_it_once() -> None:
    shown = ShownVersions(max_bytes=100)
    shown.put(("m", 1, None, False), b"a" * 10)
    shown.put(("m", 1, None, False), b"b" * 20)
    assert shown.size == 20
    assert shown.get(("m", 1, None, False)) == b"b" * 20
