"""``playtable verify``: re-fold every stored match from its events and compare the snapshots.

The ``matches`` row and the ``match_snapshots`` rows are caches of the event fold; this reads
them all straight from Postgres and checks each against the rules engines run in-process. A
corrupt match is reported like any other difference, and the other matches are still checked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgspec

from services.operator.stored import Archive, StoredMatch, UnreadableMatch, open_archive
from services.rules.engine import GameCodec, RulesEngine, UnknownGame
from services.rules.games.registry import GAMES
from shared.infra.settings import Settings


def differences(
    codec: GameCodec,
    match: StoredMatch,
    events: list[tuple[int, bytes]],
    snapshots: dict[int, bytes],
) -> Iterator[str]:
    """Every way the stored rows of one match disagree with the fold of its events.

    The fold stops at the first event that does not decode or fold: the states after it are
    unknown, so the snapshots from there on and the ``matches`` row are left unchecked."""
    versions = [version for version, _ in events]
    yield from _version_differences(versions)
    if match.version != len(events):
        yield f"version {match.version}, but {len(events)} events"
    last = max(versions, default=0)
    for version in sorted(snapshots.keys() - set(versions)):
        if version > last:
            yield f"snapshot at version {version} is beyond the last event"
        else:
            yield f"snapshot at version {version}, which has no event"
    decoded = []
    undecoded = None
    for version, data in events:
        try:
            decoded.append(codec.event_decoder.decode(data))
        except msgspec.DecodeError as error:
            undecoded = f"event at version {version} does not decode: {error}"
            break
    if undecoded is not None:
        yield from _fold_differences(codec, match, events, decoded, snapshots)
        yield undecoded
        return
    # a log recorded before rules versions may read several ways (``Game.readings``): the
    # rows are consistent if they are the fold of one of them
    readings = codec.game.all_readings(decoded)
    first = list(_fold_differences(codec, match, events, readings[0], snapshots))
    if first and not any(
        not any(_fold_differences(codec, match, events, reading, snapshots))
        for reading in readings[1:]
    ):
        yield from first


def _fold_differences(
    codec: GameCodec,
    match: StoredMatch,
    events: list[tuple[int, bytes]],
    decoded: list[Any],
    snapshots: dict[int, bytes],
) -> Iterator[str]:
    """How the stored rows differ from the fold of ``decoded`` (the events that decode, as
    one reading of the log), up to the first event that does not fold."""
    state = None
    for (version, _), event in zip(events, decoded, strict=False):
        try:
            state = codec.evolve(state, event)
        except Exception as error:  # a corrupt log may break any invariant of the engine
            yield f"fold fails at version {version}: {type(error).__name__}: {error}"
            return
        stored = snapshots.get(version)
        if stored is not None and not _same_state(codec, stored, state):
            yield f"snapshot at version {version} differs from the fold"
    if state is None or len(decoded) < len(events):
        return
    try:
        folded = codec.progress(state, decoded)
    except Exception as error:  # folded without a complaint, yet not a state the engine reads
        yield f"the folded state cannot be read: {type(error).__name__}: {error}"
        return
    if not _same_state(codec, match.state, state):
        yield "state differs from the fold"
    if match.to_move != folded.to_move and match.to_move not in codec.game.stored_to_moves(
        state, decoded
    ):
        yield f"to_move {match.to_move}, but the fold says {folded.to_move}"
    status = "finished" if folded.result is not None else "running"
    if match.status != status:
        yield f"status {match.status}, but the fold says {status}"
    if match.result != folded.result:
        yield f"result {match.result}, but the fold says {folded.result}"


def _version_differences(versions: list[int]) -> Iterator[str]:
    """How the versions of a match's events, in stream order, differ from 1..n."""
    counts = Counter(versions)
    repeated = sorted(version for version, count in counts.items() if count > 1)
    if repeated:
        yield f"event versions repeated: {repeated}"
    missing = sorted(set(range(1, max(versions, default=0) + 1)) - counts.keys())
    if missing:
        yield f"event versions missing: {missing}"
    below_one = sorted(version for version in counts if version < 1)
    if below_one:
        yield f"event versions below 1: {below_one}"


def _same_state(codec: GameCodec, stored: bytes, folded: Any) -> bool:
    """Equal as states: identical bytes, or equal once decoded (sets and dicts may be stored
    in another iteration order than a fresh fold produces)."""
    if stored == codec.msgpack.encode(folded):
        return True
    try:
        return codec.state(stored) == folded
    except msgspec.DecodeError:
        return False


async def verify(settings: Settings) -> int:
    """Print one line per difference and a summary; 1 if anything differs, else 0."""
    engine = RulesEngine(GAMES)
    checked = failed = 0
    async with open_archive(settings) as archive:
        for match in await archive.every_match():
            found = await _match_differences(engine, archive, match)
            checked += 1
            failed += bool(found)
            for difference in found:
                print(f"{match.match_id}: {difference}")
    print(f"verified {checked} matches: {checked - failed} consistent, {failed} with differences")
    return 1 if failed else 0


async def _match_differences(
    engine: RulesEngine, archive: Archive, match: StoredMatch | UnreadableMatch
) -> list[str]:
    """How one match's rows differ from the fold of its events, or why they cannot be
    checked: a corrupt row is that match's difference, and verify goes on to the next."""
    if isinstance(match, UnreadableMatch):
        return [f"its matches row cannot be read: {match.reason}"]
    try:
        codec = engine.codec(match.game)
    except UnknownGame:
        return [f"unknown game {match.game!r}"]
    try:
        stored = await archive.events(match.match_id)
    except msgspec.DecodeError as error:  # an event's metadata
        return [f"its events cannot be read: {error}"]
    events = [(event.version, event.data) for event in stored]
    snapshots = await archive.snapshots(match.match_id)
    try:
        return list(differences(codec, match, events, snapshots))
    except Exception as error:  # a corrupt row may break what the engine assumes anywhere
        return [f"cannot be verified: {type(error).__name__}: {error}"]


def run(settings: Settings) -> int:
    return asyncio.run(verify(settings))
