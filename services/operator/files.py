"""``playtable replay``, ``export`` and ``import``: matches in the terminal and as files.

``replay`` and ``export`` read Postgres directly and run the rules engines in-process (like
``verify``), so they work on a database alone; ``import`` goes through the match service's API,
which checks the file and stores the new match as any other.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

import httpx
import msgspec
from tqdm import tqdm

from services.operator.stored import Archive, StoredMatch, open_archive
from services.rules.engine import RulesEngine
from shared.domain import rules_api as api
from shared.domain.match_file import match_file
from shared.edge.apps import API_KEY_HEADER
from shared.infra.eventstore import StoredEvent
from shared.infra.settings import Settings

_json = msgspec.json.Encoder()


class Move(msgspec.Struct, frozen=True):
    """Consecutive events of one move (or of the set-up), as the viewer may see them."""

    seat: int | None
    events: list[dict[str, Any]]


# --- replay ----------------------------------------------------------------------------------


def moves(stored: list[StoredEvent], shown: list[msgspec.Raw]) -> list[Move]:
    """The events grouped by the move that caused them: one request, one seat."""
    pairs = zip(stored, shown, strict=True)
    by_move = groupby(pairs, key=lambda p: (p[0].metadata.correlation_id, p[0].metadata.actor.seat))
    return [
        Move(seat, [msgspec.json.decode(data) for _, data in group]) for (_, seat), group in by_move
    ]


def event_line(event: dict[str, Any]) -> str:
    """``Type key=value ...``, values as compact JSON."""
    fields = " ".join(
        f"{key}={_json.encode(value).decode()}" for key, value in event.items() if key != "type"
    )
    return f"{event.get('type', '?')} {fields}".rstrip()


def replay_lines(match: StoredMatch, move_list: list[Move], viewer: str) -> Iterator[str]:
    """The match turn by turn, then the result if it is over."""
    yield f"match {match.match_id} · {match.game} · {match.status} · version {match.version}"
    yield "players: " + ", ".join(f"{seat} {name}" for seat, name in enumerate(match.players))
    yield f"viewed as: {viewer}"
    turn = 0
    for move in move_list:
        yield ""
        if move.seat is None:
            yield "set-up" if turn == 0 else "system"
        else:
            turn += 1
            yield f"turn {turn} · seat {move.seat} ({_name(match, move.seat)})"
        for event in move.events:
            yield "  " + event_line(event)
    if match.result is not None:
        yield ""
        yield "result: " + event_line({"type": "", **match.result}).strip()


def _name(match: StoredMatch, seat: int) -> str:
    return match.players[seat] if 0 <= seat < len(match.players) else "?"


async def replay(settings: Settings, match_id: str, seat: int | None, full: bool) -> int:
    from services.rules.games.registry import GAMES  # the engines: not for `playtable import`

    engine = RulesEngine(GAMES)
    async with open_archive(settings) as archive:
        found = await archive.matches([match_id])
        if not found:
            print(f"no match {match_id}", file=sys.stderr)
            return 1
        (match,) = found
        if full and match.status != "finished":
            print(
                f"match {match_id} is still running: --full (every hand, the deck) opens"
                " once it has finished; use --seat N or watch as a spectator",
                file=sys.stderr,
            )
            return 2
        if seat is not None and not 0 <= seat < len(match.players):
            print(f"match {match_id} has seats 0-{len(match.players) - 1}", file=sys.stderr)
            return 2
        stored = await archive.events(match_id)
    raws = [msgspec.Raw(event.data) for event in stored]
    if full:
        shown = raws
        viewer = "everything (--full)"
    else:
        shown = engine.handle(api.RedactEvents(game=match.game, events=raws, seat=seat))
        viewer = "spectator" if seat is None else f"seat {seat} ({_name(match, seat)})"
    for line in replay_lines(match, moves(stored, shown), viewer):
        print(line)
    return 0


# --- export ----------------------------------------------------------------------------------


async def export(
    settings: Settings,
    match_ids: list[str],
    game: str | None,
    file_format: str,
    out: str,
) -> int:
    """Write one file per finished match; 1 if a named match is missing or would not export."""
    from services.rules.games.registry import GAMES  # the engines: not for `playtable import`

    engine = RulesEngine(GAMES)
    failed = 0
    async with open_archive(settings) as archive:
        found = await archive.matches(match_ids or None, game)
        missing = sorted(set(match_ids) - {match.match_id for match in found})
        for match_id in missing:
            print(f"no match {match_id}" + (f" of {game}" if game else ""), file=sys.stderr)
        bar = tqdm(found, desc="exporting", unit="match", file=sys.stderr, disable=len(found) < 2)
        for match in bar:
            if match.status != "finished":
                bar.write(f"skipped {match.match_id}: still running", file=sys.stderr)
                continue
            document = await _document(engine, archive, match, file_format)
            if isinstance(document, api.Rejected):
                bar.write(f"skipped {match.match_id}: {document.detail}", file=sys.stderr)
                failed += 1
                continue
            _write(out, match.match_id, document)
    return 1 if failed or missing else 0


async def _document(
    engine: RulesEngine, archive: Archive, match: StoredMatch, file_format: str
) -> bytes | api.Rejected:
    stored = await archive.events(match.match_id)
    if file_format == "playtable":
        return _json.encode(
            match_file(
                game=match.game,
                options=match.options,
                players=match.players,
                result=match.result,
                events=stored,
                commitments=match.commitments,
            )
        )
    exported = engine.handle(
        api.ExportMatch(
            game=match.game,
            events=[msgspec.Raw(event.data) for event in stored],
            players=match.players,
            format=file_format,
        )
    )
    return exported if isinstance(exported, api.Rejected) else _json.encode(exported)


def _write(out: str, match_id: str, document: bytes) -> None:
    if out == "-":
        sys.stdout.buffer.write(document + b"\n")
        sys.stdout.flush()
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{match_id}.json").write_bytes(document + b"\n")


# --- import ----------------------------------------------------------------------------------


def import_files(paths: list[str], game: str | None, match_url: str, app_key: str) -> int:
    """POST each file to the match service, as the app ``app_key`` names; print the new match
    and its seat tokens."""
    failed = 0
    headers = {API_KEY_HEADER: app_key}
    with httpx.Client(base_url=match_url, timeout=60, headers=headers) as client:
        for path in paths:
            try:
                document = msgspec.json.decode(Path(path).read_bytes())
            except (OSError, msgspec.DecodeError) as error:
                print(f"{path}: cannot read: {error}", file=sys.stderr)
                failed += 1
                continue
            body: dict[str, Any] = {"document": document}
            if game is not None:
                body["game"] = game
            response = client.post("/matches/import", json=body)
            if response.status_code >= 400:
                print(
                    f"{path}: refused ({response.status_code}): {_detail(response)}",
                    file=sys.stderr,
                )
                failed += 1
                continue
            imported = response.json()
            print(f"{path}: match {imported['match_id']} ({imported['match']['status']})")
            for seat, token in enumerate(imported["tokens"]):
                print(f"  seat {seat} token {token}")
    return 1 if failed else 0


def _detail(response: httpx.Response) -> str:
    try:
        problem = response.json()
    except ValueError:
        return response.text
    return problem.get("detail") or problem.get("title") or response.text


# --- entry points ----------------------------------------------------------------------------


def run_replay(settings: Settings, match_id: str, seat: int | None, full: bool) -> int:
    return asyncio.run(replay(settings, match_id, seat, full))


def run_export(
    settings: Settings, match_ids: list[str], game: str | None, file_format: str, out: str
) -> int:
    if out == "-" and len(match_ids) != 1:
        print("--out - writes one match to stdout: name exactly one match id", file=sys.stderr)
        return 2
    return asyncio.run(export(settings, match_ids, game, file_format, out))
