"""The lobby's composition: its runtime, tables, durable commands and the rules catalogue, and
what its routes share (one transaction per request, at most once per Idempotency-Key)."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
from litestar import Request, Response

from services.lobby import schemas as s
from services.lobby.closing import IdleSweep
from services.lobby.tables import Tables
from shared.domain import rules_api
from shared.edge import apps
from shared.edge.access import known_caller
from shared.edge.errors import Problem, not_found
from shared.edge.idempotency import (
    Idempotent,
    idempotent,
    json_answer,
    recall,
    remember,
)
from shared.edge.runtime import Runtime
from shared.infra.commands import CommandRedriver, CommandWatch, Waiter

_json = msgspec.json.Encoder()
_table_decoder = msgspec.json.Decoder(s.TableInfo)


class Lobby:
    """The lobby's composition: its runtime, its tables, the commands it sends (re-driven until
    done, which a watch on Postgres' notifications tells), and the rules catalogue it caches."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.tables = Tables(runtime)
        self.commands: CommandRedriver
        self.done: CommandWatch
        self._catalogue: dict[str, s.GameInfo] | None = None
        self._secret_options: dict[str, set[str]] = {}

    async def start(self) -> None:
        await self.runtime.start(sealing=True, then=self._work)

    async def _work(self) -> None:
        """The lobby's background work, once Postgres answers (no table starts before)."""
        self.commands = CommandRedriver(self.runtime.pool, self.runtime.bus)
        # Its own connection, closed when the runtime stops its tasks.
        self.done = CommandWatch(self.runtime.pool, self.runtime.settings.database_url)
        self.runtime.spawn("command-redriver", self.commands.run(self.runtime.stop))
        self.runtime.spawn("command-watch", self.done.run(self.runtime.stop))
        idle_s = self.runtime.settings.open_table_idle_s
        if idle_s > 0:
            sweep = IdleSweep(self.tables.steps, idle_s)
            self.runtime.spawn("idle-table-sweep", sweep.run(self.runtime.stop))

    async def catalogue(self) -> dict[str, s.GameInfo]:
        if self._catalogue is None:
            reply = await self.runtime.ask_rules(rules_api.Catalogue(), list[s.GameInfo])
            self._secret_options = {
                game.name: {option.name for option in game.options if option.secret}
                for game in reply
            }
            self._catalogue = {game.name: game for game in reply}
        return self._catalogue

    async def game(self, name: str) -> s.GameInfo:
        games = await self.catalogue()
        if name not in games:
            raise not_found("game", name)
        return games[name]

    async def secret_options(self) -> dict[str, set[str]]:
        """Each game's secret options (read only: shared by every request)."""
        await self.catalogue()
        return self._secret_options

    async def caller(self, request: Request[Any, Any, Any], scope: str) -> apps.Caller:
        return known_caller(request, scope) or await apps.authenticate(
            self.runtime.pool, self.runtime.settings, request.headers, scope
        )

    async def once(self, request: Idempotent | None, work: Any, status: int) -> Response[Any]:
        """Run ``work(conn) -> body`` in one transaction, at most once per Idempotency-Key."""
        body, status, replayed = await self._once(request, work, status)
        return json_answer(body, status, replayed=replayed)

    async def _once(
        self, request: Idempotent | None, work: Any, status: int
    ) -> tuple[bytes, int, bool]:
        """The answer's body and status, and whether it repeats a recorded one."""
        async with self.runtime.pool.connection() as conn, conn.transaction():
            if request is not None:
                recorded = await recall(conn, self.runtime.keyring, request)
                if recorded is not None:
                    return recorded.body, recorded.status, True
            body = _json.encode(await work(conn))
            if request is not None:
                await remember(conn, self.runtime.keyring, request, status, body)
        self.runtime.relay.wake()
        return body, status, False

    async def start_table(
        self, table_id: str, token: str, key: str | None, secrets: dict[str, set[str]]
    ) -> Response[Any]:
        """Start the table, then answer once its match exists (201); if that takes longer than
        ``start_wait_s`` (its rules worker down, say), answer 202 with the match's
        ``Location``, which shows the ``creating`` state until then. A retry does the same."""

        with contextlib.ExitStack() as waiting:
            waiter: Waiter | None = None

            async def work(conn: Any) -> s.TableInfo:
                nonlocal waiter
                table = await self.tables.start(conn, table_id, token, secrets)
                assert table.match_id is not None  # a started table names its match
                # Waiting from before the command commits: its notification cannot be missed.
                waiter = waiting.enter_context(self.done.watch(table.match_id))
                return table

            request = idempotent(f"lobby:start:{table_id}", key, token)
            body, _, replayed = await self._once(request, work, 201)
            self.commands.wake()
            match_id = _table_decoder.decode(body).match_id
            assert match_id is not None
            # A retry answered from its record looks first: its match may exist by now.
            created = await self.done.wait(match_id, self.runtime.settings.start_wait_s, waiter)
        if created is not None and created.outcome is not None and created.outcome != "done":
            raise Problem(422, "match-refused", "Match refused by the rules", created.outcome)
        answer = json_answer(body, 201 if created and created.done else 202, replayed=replayed)
        answer.headers["Location"] = f"/matches/{match_id}"
        return answer
