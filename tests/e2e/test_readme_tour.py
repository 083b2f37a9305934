"""The API tour (docs/tour.md, which the README links), run as it is written against
``playtable stack``: a step that fails (any curl answered 4xx or 5xx, any command) fails the
test."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Gateway, free_port

pytestmark = pytest.mark.e2e

TOUR = Path(__file__).resolve().parents[2] / "docs" / "tour.md"


def tour_script() -> str:
    """The first ``sh`` block after the tour's introduction."""
    text = TOUR.read_text()
    found = re.search(r"A tour of the API.*?^```sh\n(.*?)^```", text, re.S | re.M)
    assert found, "docs/tour.md has no tour block"
    return found.group(1)


@pytest.fixture(scope="module", autouse=True)
def stack_defaults() -> Iterator[None]:
    """The stack as ``./infra/up.sh`` starts it, with no webhook networks named (the tour's
    receiver on loopback is reached by the local stack's own default); unset before the
    gateway starts (autouse fixtures come first in their scope)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS", raising=False)
        yield


def run_tour(gateway: Gateway, output: Path) -> str:
    """Run the tour with bash, stopping at its first failure. Its output goes to a file: the
    receiver it starts in the background would hold a pipe open after a failure."""
    env = {
        **os.environ,
        "API": str(gateway.client.base_url).rstrip("/"),
        "KEY": gateway.stack.app_key,
        "HOOK_PORT": str(free_port()),
    }
    with output.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", "-c", "set -euo pipefail\n" + tour_script()],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, the receiver's too
        )
    try:
        returncode: int | str = process.wait(timeout=120)
    except subprocess.TimeoutExpired:
        returncode = "none: timed out"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    text = output.read_text()
    assert returncode == 0, f"the tour failed (exit {returncode}):\n{text}"
    return text


def json_objects(output: str) -> list[dict[str, Any]]:
    """The lines of the output that are JSON objects (the answers the tour prints)."""
    found = []
    for line in output.splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                found.append(value)
    return found


def test_the_readme_tour_runs(gateway: Gateway, tmp_path: Path) -> None:
    output = run_tour(gateway, tmp_path / "tour.log")
    found = re.search(r"^match ([0-9a-f]{32})$", output, re.M)
    assert found, output
    match_id = found.group(1)
    answers = json_objects(output)
    accepted = [a for a in answers if {"version", "events", "to_move", "status"} <= a.keys()]
    assert accepted and accepted[0]["events"], f"no move accepted:\n{output}"
    assert [a for a in answers if {"scores", "winners"} <= a.keys()], "no result"
    exported = [a for a in answers if a.get("players") == ["ada", "bob"] and "actions" in a]
    assert exported and exported[0]["deck"], "no hanab.live export"
    assert re.search(r"^playtable-match$", output, re.M), "no match file export"
    assert f"received match-{match_id}:" in output, "the receiver got nothing"
    deliveries = re.findall(rf"^match-{match_id}:\d+:(\w+) (\w+) \[(.*)\]$", output, re.M)
    assert deliveries and deliveries[-1] == ("MatchFinished", "delivered", "204"), output
    assert all(status == "delivered" for _type, status, _codes in deliveries), output
    subscription = re.search(r"^subscription ([0-9a-f]{32}), signing secret whsec_", output, re.M)
    assert subscription, output
    assert re.search(r"^deleted: 204$", output, re.M) and re.search(r"^then: 404$", output, re.M)
    listed = gateway.client.get("/webhooks/subscriptions").json()
    assert subscription.group(1) not in {item["id"] for item in listed}


def test_refusals_no_rule_decides_are_titled_for_what_they_are(gateway: Gateway) -> None:
    """Through the gateway: the title names the refusal, the type stays its code."""
    too_many = gateway.client.post("/tables", json={"game": "hanabi", "seats": 9})
    unknown = gateway.client.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"colours": 3}}
    )
    refused = [(r.status_code, r.json()["type"], r.json()["title"]) for r in (too_many, unknown)]
    assert refused == [
        (422, "https://playtable.dev/problems/bad-seat-count", "Unsupported number of players"),
        (422, "https://playtable.dev/problems/unknown-option", "Unknown table option"),
    ]


def test_a_refused_step_inside_a_substitution_shows_its_problem(gateway: Gateway) -> None:
    """The tour's ``call`` inside ``$(...)``, as its steps use it: a refusal stops the script
    and its problem document reaches the terminal, not only curl's exit code."""
    helpers = tour_script().split("\nnew_key()")[0]  # the settings, call() and get()
    refused = subprocess.run(
        [
            "bash",
            "-c",
            "set -euo pipefail\n" + helpers + "\n"
            'TABLE=$(call -XPOST "$API/tables" -d \'{"game":"hanabi","seats":9}\' | get table_id)\n'
            "echo reached",
        ],
        env={
            **os.environ,
            "API": str(gateway.client.base_url).rstrip("/"),
            "KEY": gateway.stack.app_key,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "reached" not in refused.stdout
    assert "https://playtable.dev/problems/bad-seat-count" in refused.stderr, refused.stderr
