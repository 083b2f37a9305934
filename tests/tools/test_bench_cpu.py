"""bench api's CPU reading: each process of the stack counted under its service, children too,
and nothing of processes that are not the stack's."""

import os
import subprocess
import sys

from tools.bench.cpu import backend_database, cpu_per_move_table, stack_cpu_seconds

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
STACK = """
import subprocess, sys
spinner = [sys.executable, "-c", sys.argv[1], "services.operator.cli", "spinner"]
subprocess.run(spinner, check=True)
"""
CLI = "services.operator.cli"


def _spent(reading: dict, what: str) -> float:
    return sum(seconds for kind, seconds in reading.values() if kind == what)


def test_a_service_under_a_stack_counts_with_its_children_and_one_outside_does_not() -> None:
    before = stack_cpu_seconds({}, "playtable")
    stack = subprocess.Popen(
        [sys.executable, "-c", STACK, SPIN, CLI, "stack"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    outside = subprocess.Popen(
        [sys.executable, "-c", SPIN, CLI, "outsider"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        for process in (stack, outside):
            assert process.stdout is not None and process.stdout.readline() == b"spun\n"
        after = stack_cpu_seconds({}, "playtable")
    finally:
        for process in (stack, outside):
            process.communicate(b"\n", timeout=10)
    # the child ended before the reading: its time counts as its parent's ended children's
    assert _spent(after, "spinner") - _spent(before, "spinner") >= 0.55
    assert _spent(after, "outsider") == 0.0, "a service outside the running stack"
    assert any(pid == os.getpid() for pid, _ in after)


def test_postgres_backends_of_other_databases_are_told_apart() -> None:
    backend = "postgres: 15/main: postgres playtable 127.0.0.1(59458) idle in transaction"
    assert backend_database(backend.split()) == "playtable"
    assert backend_database("postgres: bgio [local] idle".split()) == "bgio"
    assert backend_database("postgres: 15/main: background writer".split()) is None


def test_cpu_per_move_leaves_the_load_out_and_counts_only_what_each_process_spent() -> None:
    before = {(1, 10): ("match", 1.0), (2, 10): ("load", 1.0), (3, 10): ("lobby", 9.0)}
    after = {
        (1, 10): ("match", 2.0),
        (2, 10): ("load", 3.0),
        (4, 20): ("postgres", 0.5),  # started in between: all of its time
        # (3, 10) ended in between: its time is lost, not negative
    }
    table = cpu_per_move_table(before, after, 1000)
    assert table.startswith("CPU ms per move: stack total 1.50 (")
    assert "load 2.000" in table and "match 1.000" in table and "lobby" not in table
