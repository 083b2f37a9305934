"""Starting the local stack (``playtable stack``): it waits for each service as long as the
service's process lives, and a process that exits ends the wait at once."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from services.operator.stack import wait_healthy


class Healthy(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_the_wait_ends_when_the_service_process_has_exited() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = unused.getsockname()[1]
        # a deadline far past the test's timeout: only the exit can end the wait in time
        assert not wait_healthy(f"http://127.0.0.1:{port}/health", process, timeout_s=3600)
    assert process.returncode == 3


def test_the_wait_ends_when_the_service_answers(sleeper: subprocess.Popen[bytes]) -> None:
    server = HTTPServer(("127.0.0.1", 0), Healthy)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/health"
        assert wait_healthy(url, sleeper, timeout_s=3600)
        assert sleeper.poll() is None
    finally:
        server.shutdown()
        server.server_close()
