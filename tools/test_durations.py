"""Write ``tests/durations.json`` from a JUnit XML report of a whole run (``pytest
--junitxml=F``): each test file's seconds, which the suite's workers use to start the longest
files first (``tests/conftest.py``). Run it again when files grow or are added:
``python -m tools.test_durations F``."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent.parent / "tests" / "durations.json"


def file_seconds(report: Path) -> dict[str, int]:
    """Seconds per test file (setup, call and teardown of its tests), longest first."""
    seconds: Counter[str] = Counter()
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        seconds[path] += float(case.get("time", 0))
    return {path: round(total) for path, total in seconds.most_common() if round(total)}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.test_durations REPORT.xml", file=sys.stderr)
        return 2
    DURATIONS.write_text(json.dumps(file_seconds(Path(argv[0])), indent=1) + "\n")
    print(f"wrote {DURATIONS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
