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


def write_contract(path: Path, *, check: bool = False) -> int:
    text = render(build_contract())
    if check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is stale: run `playtable openapi`", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
    return 0
