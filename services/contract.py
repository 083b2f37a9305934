"""The public OpenAPI contract (lobby, match, webhooks), generated from the code, in openapi/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from shared.http import finalize_contract
from shared.settings import Settings


def build_contract() -> dict[str, Any]:
    """Merge the public services' schemas into one OpenAPI 3.1 document."""
    from services.lobby.app import create_app as create_lobby
    from services.match.app import create_app as create_match
    from services.webhooks.app import create_app as create_webhooks

    settings = Settings(instance_id="contract")
    merged: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "playtable API",
            "version": "0.1.0",
            "description": (
                "Host turn-based tabletop games: create tables in the lobby, seat players, "
                "start matches, submit moves and read each match as your seat may see it; "
                "subscribe URLs to signed webhooks (Standard Webhooks) of the events. "
                "Errors are RFC 9457 problem+json documents with a stable `type` per error."
            ),
        },
        "servers": [
            {"url": "http://127.0.0.1:8001", "description": "lobby"},
            {"url": "http://127.0.0.1:8002", "description": "match"},
            {"url": "http://127.0.0.1:8004", "description": "webhooks"},
        ],
        "paths": {},
        "components": {"schemas": {}},
        "tags": [],
    }
    for app in (create_lobby(settings), create_match(settings), create_webhooks(settings)):
        schema = app.openapi_schema.to_schema()
        for path, item in schema.get("paths", {}).items():
            if path == "/health":
                continue  # each service has its own; not part of the public contract
            merged["paths"][path] = item
        components = schema.get("components", {})
        merged["components"]["schemas"].update(components.get("schemas", {}))
        merged["components"]["securitySchemes"] = components.get("securitySchemes", {})
        for tag in schema.get("tags", []):
            if tag not in merged["tags"]:
                merged["tags"].append(tag)
    if not merged["tags"]:
        del merged["tags"]
    return finalize_contract(merged)


def render(contract: dict[str, Any]) -> str:
    return json.dumps(contract, indent=2, sort_keys=True) + "\n"


MATCH_FILE_SCHEMA = "playtable-match.schema.json"
"""Beside the contract: the JSON Schema of the playtable match file (``shared/match_file.py``)."""


def generated_files(contract_path: Path) -> dict[Path, str]:
    """Every committed file generated from the code, by path: the contract and the schema."""
    from shared.match_file import json_schema

    return {
        contract_path: render(build_contract()),
        contract_path.parent / MATCH_FILE_SCHEMA: render(json_schema()),
    }


def write_contract(path: Path, *, check: bool = False) -> int:
    files = generated_files(path)
    if check:
        stale = [
            file for file, text in files.items() if not file.exists() or file.read_text() != text
        ]
        for file in stale:
            print(f"{file} is stale: run `playtable openapi`", file=sys.stderr)
        return 1 if stale else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    for file, text in files.items():
        file.write_text(text)
        print(f"wrote {file}")
    return 0
