"""Webhooks beside a stack for the end-to-end tests: the webhooks API and a Celery worker as
processes, and a local receiver that verifies what they send with the ``standardwebhooks``
library."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from standardwebhooks import Webhook, WebhookVerificationError

from shared.edge.apps import API_KEY_HEADER
from tests.e2e.conftest import Stack, free_port, wait_healthy

WEBHOOK_ENV = {
    "PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "PLAYTABLE_WEBHOOK_RETRY_BASE_S": "0.2",
    "PLAYTABLE_WEBHOOK_MAX_ATTEMPTS": "4",
    "PLAYTABLE_WEBHOOK_DISABLE_AFTER_FAILURES": "8",
    "PLAYTABLE_WEBHOOK_DISABLE_AFTER_S": "0",
    "PLAYTABLE_WEBHOOK_TIMEOUT_S": "30",
    "PLAYTABLE_WEBHOOK_REDRIVE_AFTER_S": "1",
    "PLAYTABLE_WEBHOOK_WORKER_CONCURRENCY": "4",
}


@dataclass
class Received:
    webhook_id: str
    body: dict[str, Any]
    signatures: int
    raw: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Receiver:
    """Receives on ``/<name>``; each name verifies with its secrets and answers as told."""

    url: str
    secrets: dict[str, list[str]] = field(default_factory=dict)
    received: dict[str, list[Received]] = field(default_factory=dict)
    requests: dict[str, list[str]] = field(default_factory=dict)
    """Every request's webhook-id per name, answered or not."""
    answers: dict[str, Callable[[str, int], int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def verified(self, name: str) -> list[Received]:
        with self.lock:
            return list(self.received.get(name, []))


def serve_receiver() -> tuple[Receiver, ThreadingHTTPServer]:
    port = free_port()
    receiver = Receiver(url=f"http://127.0.0.1:{port}")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            name = self.path.strip("/")
            body = self.rfile.read(int(self.headers["content-length"]))
            headers = {key.lower(): value for key, value in self.headers.items()}
            webhook_id = headers["webhook-id"]
            with receiver.lock:
                seen = receiver.requests.setdefault(name, [])
                seen.append(webhook_id)
                count = seen.count(webhook_id)
            for secret in receiver.secrets[name]:
                Webhook(secret).verify(body, headers)  # raises unless signed with it
            status = receiver.answers.get(name, lambda _id, _n: 200)(webhook_id, count)
            if 200 <= status < 300:
                received = Received(
                    webhook_id,
                    json.loads(body),
                    len(headers["webhook-signature"].split()),
                    body,
                    headers,
                )
                with receiver.lock:
                    receiver.received.setdefault(name, []).append(received)
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (OSError, WebhookVerificationError):
                self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return receiver, server


@dataclass
class Hooks:
    api: httpx.Client
    receiver: Receiver
    env: dict[str, str]
    log_path: str
    worker: subprocess.Popen[bytes] | None = None

    def start_worker(self) -> None:
        with open(self.log_path, "ab") as log:
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "services.operator.cli", "webhooks"],
                env=self.env,
                stdout=log,
                stderr=log,
            )

    def stop_worker(self, signum: int = signal.SIGTERM) -> None:
        assert self.worker is not None
        self.worker.send_signal(signum)
        try:
            self.worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.worker.kill()
            self.worker.wait()
        self.worker = None

    def subscribe(self, name: str, **body: Any) -> dict[str, Any]:
        created = self.api.post(
            "/webhooks/subscriptions", json={"url": f"{self.receiver.url}/{name}", **body}
        )
        assert created.status_code == 201, created.text
        secret = created.json()["secret"]
        assert secret.startswith("whsec_")
        self.receiver.secrets[name] = [secret]
        return created.json()["subscription"]

    def deliveries(self, subscription_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = 0
        while True:
            page = self.api.get(
                f"/webhooks/subscriptions/{subscription_id}/deliveries",
                params={"after": after, "limit": 200},
            )
            assert page.status_code == 200, page.text
            found += page.json()["deliveries"]
            after = page.json()["next_after"]
            if after is None:
                return found


def eventually(check: Callable[[], Any], timeout_s: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}")


@contextlib.contextmanager
def running_webhooks(stack: Stack) -> Iterator[Hooks]:
    """The webhooks API and a dispatcher with its worker, beside ``stack``, the receiver on
    loopback; all stopped after."""
    receiver, server = serve_receiver()
    port = free_port()
    env = {**stack.env, **WEBHOOK_ENV, "PLAYTABLE_WEBHOOKS_PORT": str(port)}
    api = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", timeout=10, headers={API_KEY_HEADER: stack.app_key}
    )
    with tempfile.NamedTemporaryFile(suffix=".log", delete=False) as log:
        log_path = log.name
    running = Hooks(api=api, receiver=receiver, env=env, log_path=log_path)
    api_process = subprocess.Popen(
        [sys.executable, "-m", "services.operator.cli", "webhooks-api"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_healthy(api, api_process)
        running.start_worker()
        yield running
    finally:
        if running.worker is not None:
            running.stop_worker()
        api_process.terminate()
        api_process.wait(timeout=10)
        api.close()
        server.shutdown()
        os.unlink(log_path)


def table_created(stack: Stack) -> str:
    created = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2})
    assert created.status_code == 201, created.text
    return f"table-{created.json()['table_id']}"
