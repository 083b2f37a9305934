"""``playtable copies``' verdict on throughput after a killed copy is back."""

from __future__ import annotations

from tools.copies import Phase, slow_returns


def phases(*moves_per_s: tuple[str, float]) -> list[Phase]:
    return [Phase(name, 1.0, int(rate)) for name, rate in moves_per_s]


def test_each_return_is_held_to_the_phase_before_its_kill_not_to_the_first() -> None:
    """Figures like a CI run's, where the pace drifted from 148 to about 100 moves/s, with a
    rules copy that does not come back: under half the phase before its kill is a problem;
    against the first phase, the webhooks copy would have been one too."""
    run = phases(
        ("all copies", 148),
        ("match copy killed", 181),
        ("match copy back", 122),
        ("webhooks copy killed", 108),
        ("webhooks copy back", 70),
        ("rules copy killed", 95),
        ("rules copy back", 30),
    )
    assert slow_returns(run, 0.5) == [
        "throughput did not return: rules copy back 30.0 moves/s, 70.0 before the kill"
        " (webhooks copy back)"
    ]
    assert slow_returns(run, 0.8) == [
        "throughput did not return: webhooks copy back 70.0 moves/s, 122.0 before the kill"
        " (match copy back)",
        "throughput did not return: rules copy back 30.0 moves/s, 70.0 before the kill"
        " (webhooks copy back)",
    ]


def test_a_run_without_kills_has_nothing_to_return_from() -> None:
    assert slow_returns(phases(("all copies", 100), ("all copies", 10)), 0.5) == []
