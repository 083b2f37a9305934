"""bench api's CPU reading: each process of the stack counted under its service, children too."""

import subprocess
import sys

from services.operator.bench import cpu_per_move_table, stack_cpu_seconds

SPIN = """
import os, sys, time
def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
if os.fork() == 0:  # a child (as Celery's pool is) counts for its service too
    spin(0.3)
    os._exit(0)
spin(0.3)
os.wait()
sys.stdout.write("spun\\n")
sys.stdout.flush()
sys.stdin.readline()
"""


def test_a_service_process_and_its_children_count_under_its_name() -> None:
    before = stack_cpu_seconds()
    process = subprocess.Popen(
        [sys.executable, "-c", SPIN, "services.operator.cli", "spinner"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == b"spun\n"
        after = stack_cpu_seconds()
    finally:
        process.communicate(b"\n", timeout=10)
    # the child ended before the reading: its time counts as its parent's ended children's
    assert after["spinner"] - before.get("spinner", 0.0) >= 0.55
    assert after["load (bench client)"] >= before["load (bench client)"]


def test_cpu_per_move_leaves_the_load_out_of_the_stack_total() -> None:
    table = cpu_per_move_table(
        {"match": 1.0, "load (bench client)": 1.0},
        {"match": 2.0, "postgres": 0.5, "load (bench client)": 3.0},
        1000,
    )
    assert table.startswith("CPU ms per move: stack total 1.50 (")
    assert "load (bench client) 2.000" in table and "match 1.000" in table
