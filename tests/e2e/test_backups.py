"""Backups as ``docs/operating.md`` tells them: a ``pg_dump`` of a running stack's database,
restored into a fresh one, verifies clean, and the services resume on it with an empty Redis: a
move is accepted, its events reach the match's feed, and a webhook subscribed before the backup
is delivered."""

from __future__ import annotations

import asyncio
import random
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import redis

from services.operator.verify import verify
from shared.edge.apps import API_KEY_HEADER
from shared.infra.settings import Settings
from tests.conftest import fresh_database
from tests.e2e.conftest import free_port, running_stack, wait_healthy
from tests.e2e.play import auth, open_table, random_move
from tests.e2e.test_feeds import Follower
from tests.e2e.webhooks.service import WEBHOOK_ENV, eventually, serve_receiver

pytestmark = pytest.mark.e2e

RESTORED_REDIS_DB = 14
"""A Redis database only this test uses (the suite's is 15): the restored stack starts on it
flushed, as the operator's guide has it."""


def redis_db(redis_url: str, db: int) -> str:
    return urlsplit(redis_url)._replace(path=f"/{db}").geturl()


def pg_tool(name: str, *args: str) -> None:
    tool = shutil.which(name)
    assert tool is not None, f"{name} is not installed (it comes with Postgres' client)"
    done = subprocess.run([tool, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_restored_backup_verifies_and_play_resumes_on_it(
    postgres_server_url: str, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver, server = serve_receiver()
    dump = tmp_path / "playtable.dump"
    rng = random.Random(35)
    restored_redis = redis.Redis.from_url(redis_db(redis_url, RESTORED_REDIS_DB))
    with (
        fresh_database(postgres_server_url) as original,
        fresh_database(postgres_server_url) as restored,
    ):
        with running_stack(original, redis_url) as stack:
            port = free_port()
            api = stack.start("webhooks-api", **WEBHOOK_ENV, PLAYTABLE_WEBHOOKS_PORT=str(port))
            match_id, tokens = open_table(stack, "hanabi", 2, seed=35)
            for _ in range(2):
                random_move(stack, stack.match.get(f"/matches/{match_id}").json(), tokens, rng)
            headers = {API_KEY_HEADER: stack.app_key}
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as hooks:
                wait_healthy(hooks, api)
                subscribed = hooks.post(
                    "/webhooks/subscriptions", json={"url": f"{receiver.url}/restored"}
                )
            assert subscribed.status_code == 201, subscribed.text
            receiver.secrets["restored"] = [subscribed.json()["secret"]]
            backed_up = stack.match.get(f"/matches/{match_id}").json()
            pg_tool("pg_dump", "--format=custom", f"--file={dump}", original)
            lost = random_move(stack, backed_up, tokens, rng)  # made after the backup

        pg_tool("pg_restore", "--no-owner", "--exit-on-error", f"--dbname={restored}", str(dump))
        capsys.readouterr()
        assert asyncio.run(verify(Settings(database_url=restored))) == 0
        assert capsys.readouterr().out.splitlines() == [
            "verified 1 matches: 1 consistent, 0 with differences"
        ]

        restored_redis.flushdb()
        try:
            restored_url = redis_db(redis_url, RESTORED_REDIS_DB)
            with running_stack(restored, restored_url, with_lobby=False) as stack:
                stack.start("webhooks", **WEBHOOK_ENV)
                resumed = stack.match.get(f"/matches/{match_id}").json()
                assert resumed["version"] == backed_up["version"] < lost["version"]
                follower = Follower(
                    str(stack.match.base_url),
                    f"/matches/{match_id}/feed",
                    headers=auth(tokens[0]),
                    params={"after": resumed["version"]},
                    until=lambda events: bool(events),
                ).start()
                moved = random_move(stack, resumed, tokens, rng)
                follower.join(30)
                assert follower.ids[0] == resumed["version"] + 1

                def delivered() -> list[tuple[str, int]]:
                    received = receiver.verified("restored")
                    return [(r.body["stream_id"], r.body["version"]) for r in received]

                eventually(
                    lambda: (f"match-{match_id}", moved["version"]) in delivered(),
                    what="the webhook of the move made on the restored database",
                )
                assert all(version > resumed["version"] for _, version in delivered())
        finally:
            restored_redis.flushdb()
            restored_redis.close()
            server.shutdown()
