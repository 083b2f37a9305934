"""Two copies of every service behind nginx, under a load of matches, one copy of each killed
in turn (``playtable copies``): nothing acknowledged is lost or doubled, the log verifies,
every committed event is published and delivered by webhook in its stream's order, and moves
go on in every phase. On the suite's own Postgres and Redis. Whether the throughput comes back is
a timing, judged by ``playtable copies`` (a benchmark), not here: a busy machine slows a phase."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from shared.infra.settings import Settings
from tests.faults.checks import report
from tests.faults.conftest import (
    SCALE,
    THINK_S,
    PostgresCluster,
    RedisServer,
    env_float,
    env_int,
)
from tools.copies import KILLED, run_copies

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None, reason="needs nginx")

MATCHES = env_int("PLAYTABLE_FAULT_MATCHES", 20)
PHASE_S = env_float("PLAYTABLE_COPIES_PHASE_S", 2.0) * SCALE


def test_two_copies_of_each_service_lose_nothing_when_one_of_each_is_killed(
    pg_cluster: PostgresCluster, redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = Settings(database_url=pg_cluster.url(), redis_url=redis_server.url)
    result = asyncio.run(
        run_copies(
            settings,
            copies=2,
            matches=MATCHES,
            warmup_s=2.0,
            phase_s=PHASE_S,
            directory=tmp_path,
            think_s=THINK_S,
            recovered_share=0.0,
        )
    )
    print("\n" + "\n".join(result.lines()))
    report({"copies": 2, "phases": [(p.name, p.moves) for p in result.phases]})
    assert [phase.name for phase in result.phases] == [
        "all copies",
        *(f"{service} copy {when}" for service in KILLED for when in ("killed", "back")),
    ]
    assert all(phase.moves > 0 for phase in result.phases), "moves went on in every phase"
    assert result.acknowledged_moves and result.webhook_deliveries
    assert not result.problems, "\n".join(result.problems[:40])
