"""``playtable bench backlog``'s verdict: from which second after the fault both p99s stay
under the limit."""

from __future__ import annotations

from tools.backlog import BacklogReport, Second


def report(seconds: dict[int, Second]) -> BacklogReport:
    return BacklogReport("rolling-restart", 5.0, 2.0, seconds, 0, 0, 0, 0, 100, 0, (1.0, 1))


def test_recovery_counts_from_the_last_second_over_the_limit_and_never_while_over() -> None:
    fast = Second(creations=[0.1] * 99, lateness=[0.2])
    one_slow_of_100 = Second(creations=[0.1] * 99 + [2.5], lateness=[0.1])  # p99: 0.1
    late_clock = Second(creations=[0.1], lateness=[3.0])
    during = Second(creations=[9.0], lateness=[9.0])  # before the fault's end: not counted

    assert report({-2: during, 0: fast, 1: fast}).recovered_s == 0.0
    assert report({0: one_slow_of_100, 1: fast, 2: late_clock, 3: fast}).recovered_s == 3.0
    assert report({0: fast, 1: late_clock}).recovered_s is None
    assert report({}).recovered_s is None
    assert report({0: fast}).problems == []
