"""Playtable match files through the rules engine: every game round-trips, forgeries are refused."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from shared.domain import rules_api as api
from shared.domain.match_file import MatchFile, json_schema

GAMES = load_games()
ENGINE = RulesEngine(GAMES)
EVERY = 32


def played_file(name: str, seed: int) -> dict[str, Any]:
    """A random match of ``name`` played to the end, as a match file (what an export writes)."""
    game = GAMES[name]
    seats = max(game.min_players, 3 if name == "dingo" else 2)
    rng = random.Random(seed)
    options = game.resolve_options({}, seats)
    events = game.setup(options, seats, rng)
    seat_of: list[int | None] = [None] * len(events)
    state = game.fold(events)
    while game.result(state) is None:
        seat = rng.choice(game.to_move(state))
        decided = game.decide(state, seat, rng.choice(game.legal_actions(state, seat)))
        events += decided
        seat_of += [seat] * len(decided)
        state = game.fold(decided, state)
    return {
        "format": "playtable-match",
        "format_version": 1,
        "game": name,
        "options": options,
        "players": [f"p{seat}" for seat in range(seats)],
        "status": "finished",
        "result": msgspec.to_builtins(game.result(state)),
        "events": [
            {
                "version": version,
                "type": type(event).__name__,
                "data": msgspec.to_builtins(event),
                "seat": seat,
                "recorded_at": "2026-01-01T00:00:00+00:00",
            }
            for version, (event, seat) in enumerate(zip(events, seat_of, strict=True), start=1)
        ],
    }


def import_file(document: dict[str, Any], game: str | None = None) -> Any:
    return ENGINE.handle(
        api.ImportMatch(
            game=game or document["game"],
            document=msgspec.Raw(msgspec.json.encode(document)),
            snapshot_every=EVERY,
        )
    )


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_round_trips_through_a_match_file(name: str) -> None:
    document = played_file(name, seed=7)
    msgspec.json.decode(msgspec.json.encode(document), type=MatchFile)  # what it describes
    imported = import_file(document)
    assert isinstance(imported, api.Imported), imported
    assert [msgspec.json.decode(e.data) for e in imported.events] == [
        e["data"] for e in document["events"]
    ]
    assert [e.type for e in imported.events] == [e["type"] for e in document["events"]]
    assert imported.progress.result == document["result"]
    assert imported.players == document["players"]
    assert imported.actors == [e["seat"] for e in document["events"]]
    last = len(document["events"])
    set_up = next(n for n, e in enumerate(document["events"]) if e["seat"] is not None)
    expected = sorted({set_up, *range(EVERY, last + 1, EVERY), last})
    assert [snapshot.version for snapshot in imported.snapshots] == expected
    codec = ENGINE.codec(name)
    events = codec.events([e.data for e in imported.events])
    for snapshot in imported.snapshots:
        folded = codec.game.fold(events[: snapshot.version])
        assert codec.state(snapshot.state) == folded


def refusal(document: dict[str, Any]) -> str:
    refused = import_file(document)
    assert isinstance(refused, api.Rejected), "a tampered file was imported"
    assert refused.code == "invalid_document"
    return refused.detail


def test_tampered_files_are_refused_with_a_clear_detail() -> None:
    document = played_file("dingo", seed=3)
    scores = document["result"]["scores"]
    wrong_result = {**document, "result": {**document["result"], "scores": [s + 1 for s in scores]}}
    assert "result" in refusal(wrong_result)
    assert "status" in refusal({**document, "status": "running", "result": None})
    events = document["events"]
    gap = {**document, "events": events[:5] + events[6:]}
    assert "version" in refusal(gap)
    renumbered = [{**e, "version": n} for n, e in enumerate(events[:5] + events[6:], start=1)]
    assert refusal({**document, "events": renumbered})
    alien = [dict(e) for e in events]
    alien[4] = {**alien[4], "data": {"type": "NoSuchEvent"}}
    assert "event 5" in refusal({**document, "events": alien})
    mislabelled = [dict(e) for e in events]
    mislabelled[4] = {**mislabelled[4], "type": "Other"}
    assert "event 5" in refusal({**document, "events": mislabelled})
    assert refusal({**document, "format_version": 2})


def set_up_only(name: str, seed: int) -> dict[str, Any]:
    """A match file of ``name`` cut after its set-up: a running match no one has moved in."""
    document = played_file(name, seed)
    events = document["events"]
    first_move = next(n for n, event in enumerate(events) if event["seat"] is not None)
    return {**document, "status": "running", "result": None, "events": events[:first_move]}


def forged(document: dict[str, Any], number: int, **data: Any) -> dict[str, Any]:
    """``document`` with fields of event ``number`` (from 1) replaced."""
    events = [dict(event) for event in document["events"]]
    events[number - 1]["data"] = {**events[number - 1]["data"], **data}
    return {**document, "events": events}


def hanabi_deck() -> list[int]:
    return set_up_only("hanabi", 8)["events"][0]["data"]["deck"]


def dingo_day(change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    document = set_up_only("dingo", 8)
    day = next(n for n, e in enumerate(document["events"], 1) if e["type"] == "DayStarted")
    return forged(document, day, **change(document["events"][day - 1]["data"]))


FORGED_DEALS = {
    "hanabi, a 1-card deck": (
        lambda: forged(set_up_only("hanabi", 8), 1, deck=[11]),
        "deck must hold 50 cards",
    ),
    "hanabi, a duplicate card": (
        lambda: forged(
            set_up_only("hanabi", 8),
            1,
            deck=[hanabi_deck()[0], *hanabi_deck()[1:]][:-1] + [hanabi_deck()[0]],
        ),
        "too many copies",
    ),
    "hanabi, more players than seats dealt": (
        lambda: {**set_up_only("hanabi", 8), "players": ["a", "b", "c"]},
        "deals 2 seats, not 3",
    ),
    "hanabi, 6 suits in a 5-suit table": (
        lambda: forged(set_up_only("hanabi", 8), 1, suits=6),
        "does not deal these options",
    ),
    "dingo, a ranch card short": (
        lambda: dingo_day(lambda day: {"ranches": day["ranches"][:1]}),
        "one ranch card and two hand cards",
    ),
    "dingo, a duplicate card": (
        lambda: dingo_day(lambda day: {"draw_pile": [day["ranches"][0], *day["draw_pile"][1:]]}),
        "each once",
    ),
    "dingo, a first player who is not seated": (
        lambda: forged(set_up_only("dingo", 8), 1, first_player=7),
        "from seat 7",
    ),
    "dingo, fewer players than seats dealt": (
        lambda: {**set_up_only("dingo", 8), "players": ["a", "b"]},
        "deals 3 seats, not 2",
    ),
    "breaking news, more players than seats dealt": (
        lambda: {**set_up_only("breaking_news", 8), "players": ["a", "b", "c"]},
        "deals 2 seats, not 3",
    ),
    "carcassonne, no seats": (
        lambda: forged(set_up_only("carcassonne", 8), 1, seats=0),
        "deals 0 seats, not 2",
    ),
}


@pytest.mark.parametrize("case", sorted(FORGED_DEALS))
def test_a_forged_deal_is_refused_by_name(case: str) -> None:
    """Files whose set-up no table deals (fewer cards than a deal, a card twice, another
    number of players): refused with what is wrong, never an engine failure (a 503), nor an
    import whose every read fails."""
    make, detail = FORGED_DEALS[case]
    refused = import_file(make())
    assert isinstance(refused, api.Rejected), refused
    assert refused.code == "invalid_document" and detail in refused.detail, refused.detail


def test_a_file_of_another_game_is_refused() -> None:
    document = played_file("dingo", seed=4)
    refused = import_file(document, game="breaking_news")
    assert isinstance(refused, api.Rejected) and "'dingo'" in refused.detail


def test_community_formats_still_import_and_get_snapshots() -> None:
    document = played_file("hanabi", seed=5)
    raws = [msgspec.Raw(msgspec.json.encode(e["data"])) for e in document["events"]]
    live = ENGINE.handle(api.ExportMatch(game="hanabi", events=raws, players=document["players"]))
    assert "deck" in live and "actions" in live
    imported = import_file(live, game="hanabi")
    assert isinstance(imported, api.Imported), imported
    assert imported.progress.result == document["result"]
    assert [s.version for s in imported.snapshots][0] == 1
    assert imported.snapshots[-1].version == len(imported.events)
    assert imported.actors[0] is None and imported.actors[1] is not None


def test_export_names_its_formats() -> None:
    document = played_file("dingo", seed=6)
    raws = [msgspec.Raw(msgspec.json.encode(e["data"])) for e in document["events"]]
    players = document["players"]
    assert ENGINE.handle(api.ExportMatch(game="dingo", events=raws, players=players)) is None
    refused = ENGINE.handle(
        api.ExportMatch(game="dingo", events=raws, players=players, format="hanab.live")
    )
    assert isinstance(refused, api.Rejected) and refused.code == "export_unsupported"


def test_the_schema_describes_the_format() -> None:
    schema = json_schema()
    match_file = schema["$defs"]["MatchFile"]
    assert match_file["properties"]["format"] == {"enum": ["playtable-match"]}
    assert set(match_file["required"]) >= {"format", "format_version", "game", "events"}
