"""Run the whole stack on one machine: each service its own process, stopped together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

from shared.settings import Settings


def spawn(service: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "services.cli", service], env=env)


def wait_healthy(url: str, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def run_stack(settings: Settings, *, rules_workers: int = 1) -> int:
    env = dict(os.environ)
    env.pop("PLAYTABLE_INSTANCE_ID", None)  # every process names itself
    processes = [spawn("rules", env) for _ in range(rules_workers)]
    processes += [spawn("match", env), spawn("lobby", env)]
    processes += [spawn("webhooks", env), spawn("webhooks-api", env)]
    base = f"http://{settings.host}"
    for port in (settings.match_port, settings.lobby_port, settings.webhooks_port):
        if not wait_healthy(f"{base}:{port}/health"):
            print(f"service on port {port} did not become healthy", file=sys.stderr)
    print(
        f"playtable is up: lobby {base}:{settings.lobby_port}, match {base}:{settings.match_port},"
        f" webhooks {base}:{settings.webhooks_port} (API docs at /docs on each); Ctrl-C stops it",
        flush=True,
    )
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        while not stopping and all(process.poll() is None for process in processes):
            time.sleep(0.5)
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0 if stopping else 1
