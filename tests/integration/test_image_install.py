"""The image's build instructions, as far as a machine without a Docker engine goes: the files
the Dockerfile's final stage copies, in its layout, installed by its own install command into a
fresh environment, from which the games load their data and ``playtable migrate`` builds a
schema. What it copies from the web client's stage (services/web/dist) is left out: that build
is the one tests/e2e/test_web_client.py makes and drives.

The fresh environment finds the project's dependencies in the test environment's
site-packages (a path entry, not a site directory, so the project installed there stays out):
the install resolves and builds the project from the copied files alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path

import psycopg
import pytest

from services.operator.gateway import ROOT
from tests.conftest import drop_database, with_database

pytestmark = pytest.mark.integration

DOCKERFILE = ROOT / "infra" / "deploy" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """The instructions of the Dockerfile's final stage (continuation lines joined), comments
    left out."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    every = [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip())
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    last_from = max(index for index, (instruction, _) in enumerate(every) if instruction == "FROM")
    return every[last_from + 1 :]


def build_context(destination: Path) -> tuple[Path, list[str]]:
    """Copy what the COPY instructions copy, where they put it; the pip command of RUN."""
    workdir, install = Path("/"), []
    for instruction, argument in instructions():
        if instruction == "WORKDIR":
            workdir = Path(argument)
        elif instruction == "COPY" and not argument.startswith("--from="):
            *sources, target = shlex.split(argument)
            assert not any(part.startswith("--") for part in sources), "COPY flags unhandled"
            into = destination / (workdir / target).relative_to("/")
            for source in sources:
                path = ROOT / source
                placed = into / path.name if target.endswith("/") else into
                if path.is_dir():  # without what .dockerignore keeps out of the context
                    ignored = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules")
                    shutil.copytree(path, placed, ignore=ignored)
                else:
                    placed.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, placed)
        elif instruction == "RUN":
            for command in argument.split("&&"):
                words = shlex.split(command)
                if words[:2] == ["pip", "install"]:
                    install = words[2:]
    assert install, "the Dockerfile installs nothing with pip"
    return destination / workdir.relative_to("/"), install


def test_the_image_file_set_installs_and_runs(postgres_server_url: str, tmp_path: Path) -> None:
    app, install = build_context(tmp_path / "image")
    environment = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", environment], check=True)
    python = environment / "bin" / "python"
    site_packages = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site_packages) / "project-dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n"
    )
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", *install],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]

    probe = (
        "import json, services, shared\n"
        "from services.operator.cli import CONTRACT_PATH\n"
        "from services.rules.games import load_games\n"
        "from shared.infra.db import migration_files\n"
        "print(services.__file__, shared.__file__, CONTRACT_PATH, json.dumps(sorted(load_games())),"
        " len(migration_files()), sep='\\n')\n"
    )
    shown = subprocess.run(
        [python, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    services, shared, contract, games, migrations = shown.stdout.splitlines()
    for module in (services, shared):
        assert Path(module).is_relative_to(app), module  # the image's copy, not the checkout
    assert Path(contract).is_relative_to(app) and Path(contract).exists()
    assert set(json.loads(games)) >= {"hanabi", "carcassonne", "dingo", "breaking_news"}
    assert int(migrations) > 0

    name = f"playtable_image_{uuid.uuid4().hex[:12]}"  # the command creates it
    database = with_database(postgres_server_url, name)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PLAYTABLE_")}
    try:
        migrated = subprocess.run(
            [environment / "bin" / "playtable", "migrate"],
            env={**env, "DATABASE_URL": database},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert migrated.returncode == 0, migrated.stderr[-3000:]
        with psycopg.connect(database) as conn:
            (applied,) = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
        assert applied == int(migrations)
    finally:
        drop_database(postgres_server_url, name)
