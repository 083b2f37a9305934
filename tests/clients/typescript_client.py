"""Build the TypeScript client from the committed contract and run its player (play.ts)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).with_name("typescript")
OLDEST_NODE = (18, 18)  # the pinned @hey-api/openapi-ts's engines


PLAY_CARDS = "--play-cards"
"""The player's argument to send a Hanabi and a Dingo ``PlayCard``, each to both matches."""


@dataclass
class Build:
    generator_warnings: str
    """What the generator wrote to stderr: it logs progress to stdout, warnings to stderr."""


def node_missing() -> str | None:
    """Why the TypeScript client cannot be built here, or None when node and npm are present."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not installed (infra/ensure-node.sh installs them as root)"
    return None


def node_version() -> tuple[int, int]:
    """The installed node's major and minor version."""
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    major, minor = version.stdout.strip().lstrip("v").split(".")[:2]
    return int(major), int(minor)


def run(
    command: list[str], timeout: float, cwd: Path = PROJECT
) -> subprocess.CompletedProcess[str]:
    finished = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = f"{finished.stdout}\n{finished.stderr}"
    assert finished.returncode == 0, f"{' '.join(command)} failed:\n{output}"
    return finished


def build_typescript_client() -> Build:
    """Install the pinned tools, generate the client into generated/, type-check and compile."""
    found = node_version()
    assert found >= OLDEST_NODE, f"node {found} is older than {OLDEST_NODE}"
    run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], timeout=300)
    shutil.rmtree(PROJECT / "generated", ignore_errors=True)
    shutil.rmtree(PROJECT / "dist", ignore_errors=True)
    generated = run(["npm", "run", "--silent", "generate"], timeout=300)
    run(["npm", "run", "--silent", "build"], timeout=300)
    return Build(generated.stderr.strip())


def play(
    base_url: str, app_key: str, match_specs: list[str]
) -> tuple[int, list[dict[str, Any]], str]:
    """Run the player as the app ``app_key`` names; its exit code, one summary per finished
    match (per card with ``PLAY_CARDS``), and its error output."""
    finished = subprocess.run(
        ["node", "dist/play.js", *match_specs],
        cwd=PROJECT,
        env={**os.environ, "PLAYTABLE_URL": base_url, "PLAYTABLE_APP_KEY": app_key},
        capture_output=True,
        text=True,
        timeout=600,
    )
    summaries = [json.loads(line) for line in finished.stdout.splitlines() if line.strip()]
    return finished.returncode, summaries, finished.stderr
