"""Generate the Python client from the committed contract, the way an app developer would."""

from __future__ import annotations

import importlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "openapi" / "openapi.json"
CONFIG = Path(__file__).with_name("openapi-python-client.yaml")
PACKAGE = "playtable_client"


@dataclass
class Generation:
    returncode: int
    warnings: str
    """The generator writes its warnings and errors, and only those, to stderr."""


def generate_python_client(into: Path) -> Generation:
    """Generate package ``playtable_client`` in ``into`` from the contract as committed now."""
    generator = Path(sys.executable).with_name("openapi-python-client")
    finished = subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(CONTRACT),
            "--output-path",
            str(into / PACKAGE),
            "--meta",
            "none",
            "--config",
            str(CONFIG),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return Generation(finished.returncode, finished.stderr.strip())


def import_python_client(generated_in: Path) -> ModuleType:
    """The player module, importable only once ``playtable_client`` exists on ``sys.path``."""
    if str(generated_in) not in sys.path:
        sys.path.insert(0, str(generated_in))
    return importlib.import_module("tests.clients.python_player")
