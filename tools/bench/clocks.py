"""``bench clocks``: how late timeouts fire with many clocks live at once (the traffic of
``tools/clock_load.py``, which the fault suite plays too)."""

from __future__ import annotations

import time

from tools.traffic import new_session


async def bench_clocks(
    lobby: str, match: str, app_key: str, clocks: int, per_move: tuple[int, int]
) -> int:
    """How late timeouts fire with ``clocks`` clocks live at once: that many clocked matches
    are started (a per-move limit drawn in ``per_move`` seconds, so all are live before the
    first runs out), left alone until each has forfeited, then read back from their logs.
    Needs the clocks service running (``playtable stack`` runs it)."""
    from tools import clock_load

    async with new_session(app_key, connections=32) as session:
        began = time.perf_counter()
        match_ids = await clock_load.open_clocked_matches(session, lobby, clocks, per_move)
        opened_s = time.perf_counter() - began
        if opened_s > per_move[0]:
            print(f"clocks: opening took {opened_s:.1f} s, longer than the shortest clock")
        running = await clock_load.wait_all_finished(
            session, match, match_ids, timeout_s=per_move[1] + 30.0
        )
        timeouts = await clock_load.collect_timeouts(session, match, match_ids)
    print(
        f"clocks: {clocks} live clocks (opened in {opened_s:.1f} s, per-move limits"
        f" {per_move[0]}-{per_move[1]} s): {timeouts.report()}; still running: {len(running)}"
    )
    return 0 if not (timeouts.doubled or timeouts.lost or running) else 1
