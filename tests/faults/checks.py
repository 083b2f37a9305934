"""The fault suite's reports and its ``playtable verify`` check (what must hold is in
``tools/integrity.py``)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

from tests.faults.conftest import FaultStack
from tests.waiting import busy_factor as busy_factor  # the suite's tests read it from here


def check_verify(stack: FaultStack) -> list[str]:
    done = stack.verify()
    if done.returncode == 0:
        return []
    return [f"verify exit {done.returncode}: {(done.stdout + done.stderr)[-2000:]}"]


@dataclass
class FaultReport:
    fault: str
    acknowledged_moves: int
    lost: int
    duplicated: int
    unacknowledged_commits: int
    recovery_moves_s: float | None
    recovery_tables_s: float | None
    moves_during_fault: int
    failed_attempts: dict[str, int]
    unexpected_answers: int
    gave_up: int
    problems: list[str]

    def line(self) -> str:
        def seconds(value: float | None) -> str:
            return "never" if value is None else f"{value:.2f}s"

        return (
            f"[fault {self.fault}] acked={self.acknowledged_moves} lost={self.lost}"
            f" duplicated={self.duplicated} unacked_commits={self.unacknowledged_commits}"
            f" recovery(moves)={seconds(self.recovery_moves_s)}"
            f" recovery(tables)={seconds(self.recovery_tables_s)}"
            f" moves_during_fault={self.moves_during_fault} gave_up={self.gave_up}"
            f" retried={sum(self.failed_attempts.values())} problems={len(self.problems)}"
        )


def report(entry: dict[str, Any] | FaultReport) -> None:
    """Print the summary line and append it as JSON to ``PLAYTABLE_FAULT_REPORT``."""
    if isinstance(entry, FaultReport):
        print("\n" + entry.line())
        record: dict[str, Any] = asdict(entry)
        record["problems"] = record["problems"][:50]
    else:
        print("\n" + json.dumps(entry))
        record = entry
    path = os.environ.get("PLAYTABLE_FAULT_REPORT")
    if path:
        with open(path, "a") as file:
            file.write(json.dumps(record, default=str) + "\n")
