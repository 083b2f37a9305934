"""What several benchmarks share: each game's usual number of players, and latencies told as
percentiles."""

from __future__ import annotations

import statistics

DEFAULT_PLAYERS = {"hanabi": 2, "carcassonne": 2, "dingo": 3, "breaking_news": 3}


def percentiles(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000
    return f"p50 {p50:.2f} ms, p99 {p99:.2f} ms ({len(ordered)} requests)"
