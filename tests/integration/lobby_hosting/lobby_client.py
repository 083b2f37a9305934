"""The lobby as the hosting tests reach it: requests with the app's key, the rows and events
they left, a finished match as the match service would record it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import msgspec
from psycopg_pool import AsyncConnectionPool

from shared.domain.hosting import Hosting
from shared.domain.messages import CreateMatch, decode_command
from shared.infra.eventstore import EventStore
from shared.infra.settings import Settings

HOSTING = {
    "clock": {"bank_s": 300, "increment_s": 5},
    "on_timeout": "bot",
    "on_leave": "bot",
    "bot": "hanabi-random",
}


def hosting(shown: Any) -> Hosting:
    """The hosting a body shows (whether or not it writes out the defaults)."""
    return msgspec.convert(shown, Hosting)


@dataclass
class Lobby:
    client: httpx.AsyncClient
    """Sends the app's key with every request."""
    pool: AsyncConnectionPool
    settings: Settings

    async def create(self, **body: Any) -> dict[str, Any]:
        created = await self.client.post("/tables", json=body)
        assert created.status_code == 201, created.text
        return created.json()

    async def join(self, table_id: str, name: str, **body: Any) -> dict[str, Any]:
        joined = await self.client.post(f"/tables/{table_id}/seats", json={"name": name, **body})
        assert joined.status_code == 201, joined.text
        return joined.json()

    async def table(self, table_id: str, token: str | None = None) -> dict[str, Any]:
        seen = await self.client.get(f"/tables/{table_id}", headers=auth(token) if token else {})
        assert seen.status_code == 200, seen.text
        return seen.json()

    async def start(self, table_id: str, token: str) -> dict[str, Any]:
        started = await self.client.post(f"/tables/{table_id}/start", headers=auth(token))
        # No match service runs: the start answers 202 once ``start_wait_s`` has passed.
        assert started.status_code in (201, 202), started.text
        return started.json()

    async def rematch(self, table_id: str, token: str, key: str | None = None) -> httpx.Response:
        headers = {**auth(token), **({"Idempotency-Key": key} if key else {})}
        return await self.client.post(f"/tables/{table_id}/rematch", headers=headers)

    async def fetch(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            result = await conn.execute(query, params)
            return await result.fetchall()

    async def events(self, table_id: str) -> list[tuple[str, dict[str, Any]]]:
        stored = await EventStore(self.pool).read_stream(f"table-{table_id}")
        return [(event.type, msgspec.json.decode(event.data)) for event in stored]

    async def create_match(self, match_id: str) -> CreateMatch:
        """The ``CreateMatch`` command the table's start recorded."""
        rows = await self.fetch("select payload from commands where subject = %s", match_id)
        assert len(rows) == 1
        envelope = decode_command(bytes(rows[0][0]))
        assert envelope.type == "CreateMatch"
        return msgspec.json.decode(envelope.body, type=CreateMatch)

    async def finish(self, match_id: str, status: str = "finished") -> None:
        """The match service's row of the match, as it reads once the match is over."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "insert into matches (match_id, game, seats, options, players, version, state,"
                " to_move, status) values (%s, 'hanabi', 2, '{}', '[]', 1, '', '{}', %s)"
                " on conflict (match_id) do update set status = excluded.status",
                (match_id, status),
            )


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
