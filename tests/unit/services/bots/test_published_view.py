"""The bots use the games' published view, not engine internals: from ``services.rules.games``
they import only the registry, the engine contract and each game's ``public`` module, and no
private name (issue 33)."""

from __future__ import annotations

import ast
from pathlib import Path

import services.bots

BOTS_DIR = Path(services.bots.__file__).parent
GAMES = "services.rules.games"
PUBLISHED = {f"{GAMES}.registry", f"{GAMES}.contract"}


def published(module: str) -> bool:
    return module in PUBLISHED or (
        module.startswith(f"{GAMES}.") and module.count(".") == 4 and module.endswith(".public")
    )


def test_the_bots_import_only_the_games_published_modules() -> None:
    found = []
    for path in sorted(BOTS_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(GAMES):
                module = node.module or ""
                names = [alias.name for alias in node.names]
                if not published(module) or any(name.startswith("_") for name in names):
                    found.append(f"{path.name}:{node.lineno} {module} {names}")
            elif isinstance(node, ast.Import):
                found += [
                    f"{path.name}:{node.lineno} {alias.name}"
                    for alias in node.names
                    if alias.name.startswith(GAMES)
                ]
    assert not found, f"bots import engine internals: {found}"
