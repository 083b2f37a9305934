"""What must hold after traffic under faults, read straight from Postgres and Redis: every
acknowledged move in the log exactly once, streams without gaps, started tables with their
matches, every committed event published in order. Shared by ``playtable copies`` and the
fault-injection suite (``tests/faults``)."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

import msgspec
import psycopg
import redis as redis_sync

from shared.domain.messages import EventEnvelope
from shared.infra.settings import Settings, stream_key
from shared.infra.streams import MATCH_EVENTS_STREAM
from tools.traffic import Ack, Load

SHOWN_AS = {"DayStarted": "DayDealt"}
"""Stored event types a seat is shown under another name (Dingo's deal, see its ``redact``)."""


@dataclass
class Integrity:
    lost: list[str] = field(default_factory=list)
    """Acknowledged moves whose events are not in the log as acknowledged."""
    duplicated: list[str] = field(default_factory=list)
    """Acknowledged moves claiming versions another acknowledged move claims too, or one key
    acknowledged at two versions."""
    unacknowledged: list[str] = field(default_factory=list)
    """Versions committed by no acknowledged move (nor the set-up): a move committed twice."""
    gaps: list[str] = field(default_factory=list)
    """Streams whose versions are not 1..n, rows whose version is not the event count."""

    @property
    def problems(self) -> list[str]:
        return self.lost + self.duplicated + self.unacknowledged + self.gaps


def versions_by_match(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return dict(conn.execute("select match_id, version from matches").fetchall())


def check_log(database_url: str, load: Load) -> Integrity:
    """Every acknowledged move in the log exactly once; every stream contiguous."""
    found = Integrity()
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "select stream_id, version, type from events where stream_id like 'match-%'"
            " order by stream_id, version"
        ).fetchall()
        matches = dict(conn.execute("select match_id, version from matches").fetchall())
    log: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for stream_id, version, type_ in rows:
        log[stream_id.removeprefix("match-")].append((version, type_))
    for match_id, events in log.items():
        versions = [version for version, _ in events]
        if versions != list(range(1, len(versions) + 1)):
            found.gaps.append(f"match {match_id}: versions {_ranges(versions)}")
        if matches.get(match_id) != len(versions):
            found.gaps.append(
                f"match {match_id}: row version {matches.get(match_id)}, {len(versions)} events"
            )
    for match_id, version in matches.items():
        if match_id not in log and version:
            found.gaps.append(f"match {match_id}: row version {version}, no events")
    claimed: dict[str, dict[int, Ack]] = defaultdict(dict)
    by_key: dict[str, Ack] = {}
    for ack in load.acks:
        types = dict(log.get(ack.match_id, []))
        stored = tuple(types.get(v, "<missing>") for v in range(ack.before + 1, ack.after + 1))
        if tuple(SHOWN_AS.get(t, t) for t in stored) != tuple(
            SHOWN_AS.get(t, t) for t in ack.types
        ):
            found.lost.append(
                f"match {ack.match_id} {ack.before}->{ack.after}: acknowledged {ack.types},"
                f" stored {stored}"
            )
        if ack.key in by_key:
            found.duplicated.append(f"key {ack.key} acknowledged twice")
        by_key[ack.key] = ack
        for version in range(ack.before + 1, ack.after + 1):
            other = claimed[ack.match_id].get(version)
            if other is not None:
                found.duplicated.append(
                    f"match {ack.match_id} v{version}: acknowledged to {other.key} and {ack.key}"
                )
            claimed[ack.match_id][version] = ack
    for match_id, created in load.created_version.items():
        final = matches.get(match_id, 0)
        extra = [v for v in range(created + 1, final + 1) if v not in claimed[match_id]]
        if extra and match_id not in load.unfinished_matches:
            found.unacknowledged.append(f"match {match_id}: versions {_ranges(extra)}")
    return found


def _ranges(versions: list[int]) -> str:
    if len(versions) <= 12:
        return str(versions)
    return f"{versions[:6]}...{versions[-6:]} ({len(versions)})"


def wait_started_tables(
    database_url: str, tables: list[str], since: float, limit_s: float
) -> float | None:
    """Seconds from ``since`` until each of ``tables`` that is started has its match (None
    if that takes longer than ``limit_s`` past now)."""
    deadline = time.monotonic() + limit_s
    while tables_without_match(database_url, tables):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)
    return time.monotonic() - since


def tables_without_match(database_url: str, tables: list[str]) -> list[str]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return [
            row[0]
            for row in conn.execute(
                "select t.table_id from lobby_tables t where t.status = 'started'"
                " and t.table_id = any(%s)"
                " and not exists (select 1 from matches m where m.match_id = t.match_id)",
                (tables,),
            ).fetchall()
        ]


def check_published(
    database_url: str,
    redis_url: str,
    prefix: str,
    versions_at_end: dict[str, int],
    wait_s: float = 15.0,
) -> list[str]:
    """For every match, every version committed after the fault's end is on the published
    stream, first seen in increasing order; a repeat must repeat a version already seen
    exactly (at least once), and nothing may be skipped."""
    decoder = msgspec.json.Decoder(EventEnvelope)
    topic = stream_key(prefix, MATCH_EVENTS_STREAM)
    deadline = time.monotonic() + wait_s
    client = redis_sync.Redis.from_url(redis_url, **Settings(redis_url=redis_url).redis_options())
    try:
        while True:
            final = versions_by_match(database_url)
            problems: list[str] = []
            seen: dict[str, dict[int, tuple[str, bytes]]] = defaultdict(dict)
            highest: dict[str, int] = {}
            for _entry_id, fields in client.xrange(topic):
                envelope = decoder.decode(fields[b"m"])
                if envelope.type == "MatchFinished":
                    continue
                match_id = envelope.stream_id.removeprefix("match-")
                content = (envelope.type, bytes(envelope.data))
                version = envelope.version
                if version in seen[match_id]:
                    if seen[match_id][version] != content:
                        problems.append(f"match {match_id} v{version}: republished differently")
                    continue
                top = highest.get(match_id)
                floor = versions_at_end.get(match_id, 0)
                if top is not None and version != top + 1 and version > floor:
                    problems.append(f"match {match_id}: v{version} published after v{top}")
                seen[match_id][version] = content
                highest[match_id] = max(version, top or 0)
            for match_id, version in final.items():
                floor = versions_at_end.get(match_id, 0)
                missing = [v for v in range(floor + 1, version + 1) if v not in seen[match_id]]
                if missing:
                    problems.append(f"match {match_id}: versions {_ranges(missing)} unpublished")
            if not problems or time.monotonic() > deadline:
                return problems
            time.sleep(0.25)
    finally:
        client.close()
