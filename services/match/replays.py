"""Replays: a match at any past version, as a seat or a spectator saw it then.

A past version never changes, so what it looked like to a given viewer is computed once and
kept. A miss asks the rules service for the whole span from the nearest stored snapshot to the
next one, so stepping forward or back through a match costs one rules call per span and a memory
read for every other step.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from services.match import schemas as s
from services.match.matches import Matches
from services.match.snapshot import Snapshot, match_stream
from shared.domain import rules_api as api
from shared.domain.hosting import ClockUpdated, ClockView, TimeControl
from shared.edge.errors import Problem

_json = msgspec.json.Encoder()

ReplayKey = tuple[str, int, int | None, bool]
"""match id, version, seat (``None``: a spectator), full."""


class ShownVersions:
    """Encoded replays by key, least recently used dropped first beyond ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._shown: OrderedDict[ReplayKey, bytes] = OrderedDict()

    def get(self, key: ReplayKey) -> bytes | None:
        shown = self._shown.get(key)
        if shown is not None:
            self._shown.move_to_end(key)
        return shown

    def put(self, key: ReplayKey, shown: bytes) -> None:
        previous = self._shown.pop(key, None)
        if previous is not None:
            self.size -= len(previous)
        self._shown[key] = shown
        self.size += len(shown)
        while self.size > self.max_bytes and self._shown:
            _, dropped = self._shown.popitem(last=False)
            self.size -= len(dropped)


class Replays:
    """Serves past versions of matches from memory, filling it a snapshot span at a time."""

    def __init__(self, matches: Matches) -> None:
        self.matches = matches
        self.runtime = matches.runtime
        self.shown = ShownVersions(self.runtime.settings.replay_cache_mb * 1024 * 1024)

    async def show(self, match_id: str, token: str | None, version: int, full: bool) -> bytes:
        """The match at ``version`` as the caller saw it then (``full``: everything, once over).

        Versions start where the match was created, once set up (its first snapshot).
        """
        snapshot = await self.matches.load(match_id)
        if version > snapshot.version or (full and snapshot.status != "finished"):
            snapshot = await self.matches.load(match_id, fresh=True)
        seat = snapshot.seat_of(token)
        if full and snapshot.status != "finished":
            raise Problem(
                409,
                "match-running",
                "Match still running",
                "the full replay opens once the match has finished",
            )
        key = (match_id, version, seat, full)
        shown = self.shown.get(key)
        if shown is None:
            shown = await self._show_span(snapshot, seat, full, version)
        return shown

    async def _show_span(
        self, snapshot: Snapshot, seat: int | None, full: bool, version: int
    ) -> bytes:
        """Show every version from the snapshot at or below ``version`` up to the next one."""
        match_id = snapshot.match_id
        async with self.runtime.pool.connection() as conn:
            found = await conn.execute(
                "select version, state from match_snapshots"
                " where match_id = %s and version <= %s order by version desc limit 1",
                (match_id, version),
            )
            row = await found.fetchone()
            if row is None or version > snapshot.version:
                earliest = await conn.execute(
                    "select min(version) from match_snapshots where match_id = %s", (match_id,)
                )
                first = (await earliest.fetchone() or (None,))[0] or 1
                raise Problem(
                    404,
                    "version-not-found",
                    "No such version",
                    f"the match has versions {first} (set up) to {snapshot.version}, not {version}",
                )
            base, state = row[0], bytes(row[1])
            last = max(version, min(snapshot.version, base + self.runtime.settings.snapshot_every))
            stored = await self.runtime.store.read_stream(
                match_stream(match_id), after_version=base, limit=last - base, conn=conn
            )
            clock = await _clock_at(conn, snapshot, base)
        span: list[api.Replayed] = await self.runtime.ask_rules(
            api.ReplaySpan(
                game=snapshot.game,
                state=state,
                events=[msgspec.Raw(event.data) for event in stored],
                seat=seat,
                full=full,
            ),
            list[api.Replayed],
        )
        wanted = b""
        control = snapshot.hosting.clock
        for shown_version, replayed in enumerate(span, start=base):
            if control is not None and shown_version > base:
                event = stored[shown_version - base - 1]
                if event.type == "ClockUpdated":
                    clock = _clock_view(control, event.data)
            shown = _json.encode(_replay(snapshot, seat, shown_version, replayed, full, clock))
            self.shown.put((match_id, shown_version, seat, full), shown)
            if shown_version == version:
                wanted = shown
        return wanted


_clock_decoder = msgspec.json.Decoder(ClockUpdated)


def _clock_view(control: TimeControl, data: bytes) -> ClockView:
    """The clocks as a ``ClockUpdated`` recorded them."""
    read = _clock_decoder.decode(data)
    return ClockView(
        control=control,
        on_clock=read.on_clock,
        remaining_ms=read.remaining_ms,
        deadline_ms=read.deadline_ms,
        server_time_ms=read.server_time_ms,
    )


async def _clock_at(conn: Any, snapshot: Snapshot, version: int) -> ClockView | None:
    """The clocks at ``version``: as the last ``ClockUpdated`` up to it recorded them (a
    clocked match records one after every move, so the look back is short)."""
    control = snapshot.hosting.clock
    if control is None:
        return None
    found = await conn.execute(
        "select data from events where stream_id = %s and version <= %s"
        " and type = 'ClockUpdated' order by version desc limit 1",
        (match_stream(snapshot.match_id), version),
    )
    row = await found.fetchone()
    return None if row is None else _clock_view(control, bytes(row[0]))


def _replay(
    snapshot: Snapshot,
    seat: int | None,
    version: int,
    replayed: api.Replayed,
    full: bool,
    clock: ClockView | None,
) -> s.MatchReplay:
    return s.MatchReplay(
        match_id=snapshot.match_id,
        game=snapshot.game,
        players=snapshot.players,
        version=version,
        status="finished" if replayed.result is not None else "running",
        to_move=replayed.to_move,
        you=seat,
        view=replayed.view,
        result=replayed.result,
        state=replayed.state if full else None,
        clock=clock,
    )
