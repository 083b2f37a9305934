"""Every game's rules versions, against what earlier releases really recorded: the matches in
``recorded/`` were played by the engines of commits before each rule fix (see its README), and
each folds with today's engines to the rows its release stored, as ``playtable verify`` checks
them; a new match records the newest version of its game's rules."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from pathlib import Path

import msgspec
import pytest

from services.operator.stored import StoredMatch
from services.operator.verify import differences
from services.rules.engine import GameCodec, RulesEngine
from services.rules.games.breaking_news.cards import STORY
from services.rules.games.registry import GAMES
from shared.domain import rules_api as api

RECORDED = sorted((Path(__file__).parent / "recorded").glob("*.json"))
ENGINE = RulesEngine(GAMES)


def recorded(path: Path) -> dict:
    return json.loads(path.read_text())


def stored_rows(fixture: dict) -> tuple[StoredMatch, list[tuple[int, bytes]]]:
    """The ``matches`` row and the events its release stored, as verify reads them."""
    match, stored = fixture["match"], fixture["stored"]
    row = StoredMatch(
        match_id=f"{fixture['recorded_by']}-{match['game']}-{fixture['why']}",
        game=match["game"],
        version=stored["version"],
        state=base64.b64decode(stored["state"]),
        to_move=stored["to_move"],
        status=match["status"],
        result=match["result"],
        players=match["players"],
        options=match["options"],
        commitments={},
    )
    events = [(event["version"], json.dumps(event["data"]).encode()) for event in match["events"]]
    return row, events


@pytest.mark.parametrize("path", RECORDED, ids=[path.stem for path in RECORDED])
def test_a_match_an_earlier_release_recorded_folds_to_the_rows_it_stored(path: Path) -> None:
    fixture = recorded(path)
    row, events = stored_rows(fixture)
    codec = ENGINE.codec(row.game)
    assert list(differences(codec, row, events, {})) == []
    if row.status == "finished":
        document = msgspec.json.encode(fixture["match"])
        imported = ENGINE.handle(api.ImportMatch(row.game, msgspec.Raw(document)))
        assert isinstance(imported, api.Imported), imported
        assert imported.progress.result == row.result


def read_as_it_is(game_name: str, path_stem: str) -> list[str]:
    """What verify would find in a fixture if its log were only folded as it is recorded."""
    game = dataclasses.replace(GAMES[game_name], readings=None)
    row, events = stored_rows(recorded(Path(__file__).parent / "recorded" / f"{path_stem}.json"))
    return list(differences(GameCodec(game), row, events, {}))


def test_the_recorded_matches_hold_what_the_rule_changes_touch() -> None:
    """The fixtures show each change: Carcassonne stored within message 4's extra turn under
    versions 1 and 2 (read as version 3, either would differ), Hanabi stored with the clue
    history but no version, Breaking News stored mid-story under both its versions."""
    by_name = {path.stem: recorded(path) for path in RECORDED}
    for before in ("2a2c6b4", "431a8be"):  # version 1, then 2: held 0, then message 4
        fixture = by_name[f"{before}-carcassonne-running"]
        state = ENGINE.codec("carcassonne").state(base64.b64decode(fixture["stored"]["state"]))
        assert state.messengers.held == (4 if before == "431a8be" else 0)
        assert fixture["match"]["events"][0]["data"].get("rules_version") is None
    assert read_as_it_is("carcassonne", "2a2c6b4-carcassonne-running") == [
        "state differs from the fold"
    ]
    assert read_as_it_is("hanabi", "5810dfa-hanabi-running") == ["state differs from the fold"]
    # the same log, ended in message 4's extra turn: version 2 left message 4 out of the stack
    ended = [by_name[f"{sha}-carcassonne-ended-in-extra-turn"] for sha in ("431a8be", "a7c6a03")]
    assert ended[0]["match"]["events"][1:] == ended[1]["match"]["events"][1:]  # but pictures
    assert ended[0]["stored"]["state"] != ended[1]["stored"]["state"]
    assert read_as_it_is("carcassonne", "431a8be-carcassonne-ended-in-extra-turn") == [
        "state differs from the fold"
    ]
    for before, waited_on in (("5810dfa", 3), ("a7c6a03", 1)):
        fixture = by_name[f"{before}-breaking_news-running"]
        state = ENGINE.codec("breaking_news").state(base64.b64decode(fixture["stored"]["state"]))
        assert state.phase == STORY and len(fixture["stored"]["to_move"]) == waited_on


@pytest.mark.parametrize("game", GAMES.values(), ids=list(GAMES))
def test_a_new_match_records_the_newest_rules_version(game) -> None:
    options = game.resolve_options({}, game.min_players)
    started = game.setup(options, game.min_players, random.Random(1))[0]
    assert started.rules_version == game.rules.current == max(game.rules.changes)
    state = game.fold([started])
    in_state = game.rules.in_state(game.rules.current)  # Hanabi's and Dingo's states carry none
    assert getattr(state, "rules_version", in_state) == in_state
    assert game.rules.problem(game.rules.current) is None
    assert "no rules version" in game.rules.problem(game.rules.current + 1)


FINISHED = {
    path.stem.split("-")[1]: path for path in reversed(RECORDED) if path.stem.endswith("finished")
}
"""The oldest finished match recorded of each game."""


@pytest.mark.parametrize("path", FINISHED.values(), ids=list(FINISHED))
def test_a_match_file_of_a_rules_version_the_engine_lacks_is_refused(path: Path) -> None:
    fixture = recorded(path)
    game = GAMES[fixture["match"]["game"]]
    fixture["match"]["events"][0]["data"]["rules_version"] = game.rules.current + 1
    document = msgspec.Raw(msgspec.json.encode(fixture["match"]))
    refused = ENGINE.handle(api.ImportMatch(game.name, document))
    assert isinstance(refused, api.Rejected) and "no rules version" in refused.detail


def test_a_story_waits_on_every_seat_under_version_1_and_on_the_teller_since_2() -> None:
    """Breaking News' matches stored mid-story: recorded before versions (by a release playing
    version 1), and the same log as versions 1 and 2 record it."""
    fixture = recorded(RECORDED[0].parent / "5810dfa-breaking_news-running.json")
    game, codec = GAMES["breaking_news"], ENGINE.codec("breaking_news")
    row, events = stored_rows(fixture)
    log = codec.events([msgspec.Raw(data) for _, data in events])
    state = game.fold(log)
    teller = state.seat_to_move
    every_seat = [teller] + [seat for seat in range(state.seats) if seat != teller]
    assert row.to_move == every_seat and state.rules_version is None
    assert game.to_move(state) == [teller]  # it plays on by version 2
    assert game.stored_to_moves(state, log) == [[teller], every_seat]
    for version, waited_on in ((1, every_seat), (2, [teller])):
        versioned = [msgspec.structs.replace(log[0], rules_version=version), *log[1:]]
        state = game.fold(versioned)
        assert game.to_move(state) == waited_on
        assert game.stored_to_moves(state, versioned) == [waited_on]
        assert game.may_act(state) == list(range(state.seats))  # a listener may report silence
