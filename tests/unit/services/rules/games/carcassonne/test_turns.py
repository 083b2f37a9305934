"""Carcassonne turn lists: export, import through the rules engine, what a list may declare,
The Messengers, files of the older tile pictures, and the committed JSON Schema."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.games.carcassonne import GAME
from services.rules.games.carcassonne import turns as turn_list
from services.rules.games.carcassonne.messengers import MessageDrawn, MessageResolved
from services.rules.games.carcassonne.state import (
    CarcassonneState,
    PlaceTile,
    StackShuffled,
    TilePlaced,
)
from services.rules.games.carcassonne.tiles import (
    PICTURES,
    TILE_INDEX,
    current_rotation,
    feature_reach,
    rotation_in,
    spot_reaching,
)
from shared.domain import rules_api as api

ENGINE = RulesEngine(load_games())
CODEC = ENGINE.codec("carcassonne")
SCHEMA_FILE = Path(__file__).parents[6] / "openapi" / "carcassonne-turns.schema.json"
MESSENGERS = {"messengers": True}


def random_game(seats: int, seed: int, options: dict[str, Any] | None = None) -> list:
    """A random match to its end; any seat may act when several may (preferences)."""
    rng = random.Random(seed)
    events = GAME.setup(GAME.resolve_options(options or {}, seats), seats, rng)
    state = GAME.fold(events)
    while GAME.result(state) is None:
        seat = rng.choice(GAME.to_move(state)) if rng.random() < 0.9 else rng.randrange(seats)
        actions = GAME.legal_actions(state, seat)
        if not actions:
            continue
        new = GAME.decide(state, seat, rng.choice(actions))
        assert isinstance(new, list), new
        events += new
        state = GAME.fold(new, state)
    return events


def first_game(seats: int, options: dict[str, Any], wanted: Any) -> list:
    """The first seeded random match whose events satisfy ``wanted``."""
    for seed in range(200):
        events = random_game(seats, seed, options)
        if wanted(events):
            return events
    raise AssertionError("no such match in 200 seeds")


def placed_h_or_i(events: list, followers: int = 0) -> bool:
    placed = [e for e in events if type(e) is TilePlaced and e.tile in "HI"]
    return len(placed) > followers and sum(e.follower is not None for e in placed) >= followers


def exported(events: list, players: int | None = None) -> dict[str, Any]:
    """The turn list as a client gets it: exported by the engine, through JSON."""
    seats = events[0].seats if players is None else players
    raws = [msgspec.Raw(msgspec.json.encode(event)) for event in events]
    names = [f"player{seat}" for seat in range(seats)]
    document = ENGINE.handle(api.ExportMatch(game="carcassonne", events=raws, players=names))
    return msgspec.json.decode(msgspec.json.encode(document))


def imported(document: dict[str, Any]) -> api.Imported | api.Rejected:
    raw = msgspec.Raw(msgspec.json.encode(document))
    return ENGINE.handle(api.ImportMatch(game="carcassonne", document=raw))


def replayed_events(document: dict[str, Any]) -> list:
    reply = imported(document)
    assert isinstance(reply, api.Imported), reply
    return CODEC.events([event.data for event in reply.events])


# ---------------------------------------------------------------------------- base game


def test_a_base_game_round_trips_event_for_event():
    events = random_game(3, 21)
    document = exported(events)
    turns = document["turns"]
    assert document["format_version"] == 2 and document["messengers"] is False
    assert turns[0] == {"kind": "start", "tile": "D", "x": 0, "y": 0, "rotation": 0}
    assert turns[-1]["kind"] == "final"
    placements = [turn for turn in turns if turn["kind"] == "placement"]
    discards = [turn for turn in turns if turn["kind"] == "discard"]
    assert len(placements) + len(discards) == 71
    for turn in placements:
        assert set(turn) == {"kind", "seat", "tile", "x", "y", "rotation", "follower", "points"}
    totals = [sum(turn["points"][seat] for turn in [*placements, turns[-1]]) for seat in range(3)]
    assert totals == turns[-1]["scores"] == events[-1].scores
    assert replayed_events(document) == events


def test_a_turn_list_without_its_start_tile_is_refused_saying_so():
    document = exported(random_game(2, 3))
    for turns in (document["turns"][1:], []):
        refused = imported({**document, "turns": turns})
        assert isinstance(refused, api.Rejected) and "begins with the start tile" in refused.detail


def test_a_follower_is_named_by_the_edges_or_half_edges_its_feature_reaches():
    """Exported with its spot and where its feature meets the tile's edges on the board; an
    outside tool may give the latter alone (no tile data needed), and gets the same match."""
    events = random_game(2, 8)
    document = exported(events)
    placed = [t for t in document["turns"] if t["kind"] == "placement" and t["follower"]]
    assert placed and all(
        {"edges", "halves"} & set(t["follower"])
        for t in placed
        if t["follower"]["feature"] != "cloister"
    )
    named = [
        {**t, "follower": {k: v for k, v in t["follower"].items() if k != "spot"}}
        if t["kind"] == "placement" and t["follower"]
        else t
        for t in document["turns"]
    ]
    assert replayed_events({**document, "turns": named}) == events
    d = TILE_INDEX["D"]  # city north, road west-east, a field between them
    assert feature_reach(d, 0, 0) == {"edges": ["N"]}
    assert feature_reach(d, 1, 2) == {"halves": ["NNE", "SSE"]}  # turned: city east
    assert spot_reaching(d, 0, "field", {"halves": ["WNW"]}) == 2
    assert spot_reaching(d, 1, "road", {"edges": ["N", "S"]}) == 1
    with pytest.raises(ValueError, match="no city of tile D turned 0 reaches edges"):
        spot_reaching(d, 0, "city", {"edges": ["S"]})
    with pytest.raises(ValueError, match="more than one field"):
        spot_reaching(d, 0, "field", {})
    broken = [dict(t) for t in named]
    first = next(n for n, t in enumerate(broken) if t["kind"] == "placement" and t["follower"])
    broken[first]["follower"] = {"kind": "city", "edges": ["N", "E", "S", "W"]}
    refused = imported({**document, "turns": broken})
    assert f"turn {first + 1}'s follower: no city" in refused.detail


# ---------------------------------------------------------------------------- the messengers


@pytest.mark.parametrize(
    ("seats", "options"),
    [
        (2, MESSENGERS),
        (4, MESSENGERS),
        (6, MESSENGERS),
        (3, {**MESSENGERS, "messengers_edition": "C2", "zmg_alone_rule": True}),
    ],
)
def test_a_messengers_match_round_trips_event_for_event(seats, options):
    """Figure choices, preferences set in and out of turn, every message and how it was
    resolved, extra turns and the message stack: the replay is the same log."""
    kinds: set[str] = set()
    for seed in range(12):
        events = random_game(seats, seed, options)
        document = exported(events)
        assert document["messengers"] is True
        assert document["messengers_edition"] == options.get("messengers_edition", "C3")
        assert document["turns"][0]["message_order"] == events[1].order
        kinds |= {turn["kind"] for turn in document["turns"]}
        assert replayed_events(document) == events, f"seed {seed}"
    assert kinds >= {"start", "placement", "preference", "final"}
    if seats == 2:  # more players score more seldom in random play
        assert kinds >= {"choice", "message"}


def test_a_messengers_turn_list_shows_each_choice_message_and_extra_turn():
    events = first_game(
        2,
        {**MESSENGERS, "message_order": [4, 8, 1, 2, 3, 5, 6, 7]},
        lambda events: any(
            type(e) is MessageResolved and e.message == 4 and not e.took_points for e in events
        ),
    )
    turns = exported(events)["turns"]
    carried = next(n for n, t in enumerate(turns) if t["kind"] == "message" and t["message"] == 4)
    assert turns[carried]["action"] == "carry_out" and turns[carried]["figure"] is None
    extra = next(t for t in turns[carried + 1 :] if t["kind"] in ("placement", "discard"))
    if extra["kind"] == "placement":
        assert extra["extra_turn"] is True and extra["seat"] == turns[carried]["seat"]
    placements = [t for t in turns if t["kind"] == "placement"]
    assert sum(t["extra_turn"] for t in placements) >= 1
    choices = [t for t in turns if t["kind"] == "choice"]
    assert choices and all(t["figure"] in (0, 1) and t["gained"] > 0 for t in choices)
    totals = [sum(t["points"][seat] for t in [*placements, turns[-1]]) for seat in range(2)]
    assert totals == turns[-1]["scores"]


def test_the_message_stack_is_known_from_the_draws_when_left_out():
    """Without ``message_order`` the messages' first draws give the stack (the undrawn rest
    never mattered); a message left without its number then is refused."""
    events = first_game(2, MESSENGERS, lambda events: any(type(e) is MessageDrawn for e in events))
    document = exported(events)
    start = {k: v for k, v in document["turns"][0].items() if k != "message_order"}
    turns = [start, *document["turns"][1:]]
    replayed = replayed_events({**document, "turns": turns})
    assert [e for e in replayed if type(e) is MessageDrawn] == [
        e for e in events if type(e) is MessageDrawn
    ]
    assert GAME.result(GAME.fold(replayed)) == GAME.result(GAME.fold(events))
    drawn = [turn_list.Message("take_points", message=n) for n in (3, 5, 3, 1)]
    assert turn_list._message_order([turn_list.Start("D"), *drawn]) == [3, 5, 1, 2, 4, 6, 7, 8]
    first = next(n for n, t in enumerate(turns) if t["kind"] == "message")
    nameless = [*turns[:first], {**turns[first], "message": None}, *turns[first + 1 :]]
    assert "message_order" in imported({**document, "turns": nameless}).detail


def test_what_a_messengers_list_declares_must_be_what_its_replay_gives():
    events = first_game(2, MESSENGERS, lambda events: any(type(e) is MessageDrawn for e in events))
    document = exported(events)
    turns = document["turns"]

    def changed(kind: str, field: str, value: Any) -> str:
        number = next(n for n, t in enumerate(turns) if t["kind"] == kind)
        forged = [*turns[:number], {**turns[number], field: value}, *turns[number + 1 :]]
        refused = imported({**document, "turns": forged})
        assert isinstance(refused, api.Rejected) and refused.code == "invalid_document"
        return refused.detail

    message = next(t for t in turns if t["kind"] == "message")["message"]
    assert "declares message" in changed("message", "message", message % 8 + 1)
    assert "declares gained 99" in changed("message", "gained", 99)
    assert "declares gained 99" in changed("choice", "gained", 99)
    assert "declares extra_turn True" in changed("placement", "extra_turn", True)
    refused = imported({**document, "format_version": 1})
    assert "format_version 1" in refused.detail and "export the match again" in refused.detail


# ---------------------------------------------------------------------------- older pictures


def older_pictures(document: dict[str, Any]) -> dict[str, Any]:
    """The list as version 1 wrote it: no format_version, rotations of the older pictures."""
    turns = [
        {**t, "rotation": rotation_in(TILE_INDEX[t["tile"]], t["rotation"], 1)}
        if t["kind"] == "placement"
        else t
        for t in document["turns"]
    ]
    return {k: v for k, v in document.items() if k != "format_version"} | {"turns": turns}


def test_a_list_of_the_older_pictures_imports_as_the_same_match():
    """H was drawn with its cities east and west and I north and east: a version-1 file turns
    those tiles one quarter less, and still imports as the match it describes."""
    events = first_game(2, {}, lambda events: placed_h_or_i(events, followers=2))
    document = exported(events)
    older = older_pictures(document)
    moved = [
        (new["rotation"], old["rotation"])
        for new, old in zip(document["turns"], older["turns"], strict=True)
        if new["kind"] == "placement" and new["tile"] in "HI"
    ]
    assert moved and all(old == (new - 1) % 4 for new, old in moved)
    assert replayed_events(older) == events
    without_spots = [
        {**t, "follower": {k: v for k, v in t["follower"].items() if k != "spot"}}
        if t["kind"] == "placement" and t["follower"]
        else t
        for t in older["turns"]
    ]
    assert replayed_events({**older, "turns": without_spots}) == events
    refused = imported({**document, "format_version": 3})
    assert isinstance(refused, api.Rejected) and "format_version" in refused.detail


def test_a_match_begun_with_the_older_pictures_keeps_them_in_its_log():
    """A log whose set-up names no pictures version (written before it was recorded) turns
    its H and I rotations from the older pictures: its fold is today's board, a move made in
    it is logged in its own pictures, and its export says today's rotations."""
    events = first_game(2, {}, placed_h_or_i)
    older = [
        msgspec.structs.replace(
            event, rotation=rotation_in(TILE_INDEX[event.tile], event.rotation, 1)
        )
        if type(event) is TilePlaced
        else event
        for event in events
    ]
    stored = [msgspec.to_builtins(event) for event in older]
    assert stored[0]["type"] == "StackShuffled" and stored[0].pop("pictures") == PICTURES
    old_log = [msgspec.convert(event, GAME.event_type) for event in stored]
    assert isinstance(old_log[0], StackShuffled) and old_log[0].pictures == 1
    today, then = GAME.fold(events), GAME.fold(old_log)
    assert then.codes == today.codes and then.pictures == 1 and today.pictures == PICTURES
    assert GAME.view(then, None).board == GAME.view(today, None).board
    assert turn_list.export_turns(old_log)[1:] == turn_list.export_turns(events)[1:]
    # a move made now in the old match: offered in today's pictures, logged in the old ones
    h_or_i = next(n for n, e in enumerate(events) if type(e) is TilePlaced and e.tile in "HI")
    before_then = GAME.fold(old_log[:h_or_i])
    before_today = GAME.fold(events[:h_or_i])
    assert GAME.view(before_then, None).board == GAME.view(before_today, None).board
    action = PlaceTile(
        events[h_or_i].x, events[h_or_i].y, events[h_or_i].rotation, events[h_or_i].follower
    )
    assert action in GAME.legal_actions(before_then, events[h_or_i].seat)
    logged = GAME.decide(before_then, events[h_or_i].seat, action)
    assert logged[0] == old_log[h_or_i]


def test_a_state_stored_before_pictures_had_versions_reads_as_todays():
    """The cached state of such a match held H and I codes of the older pictures: decoded, it
    is the state a fold gives today."""
    events = first_game(2, {}, placed_h_or_i)
    state = GAME.fold(events)
    stored = msgspec.to_builtins(state)
    del stored["pictures"], stored["codes_pictures"]
    stored["codes"] = [(code & ~3) + rotation_in(code >> 2, code & 3, 1) for code in state.codes]
    assert stored["codes"] != state.codes
    decoded = msgspec.msgpack.decode(msgspec.msgpack.encode(stored), type=CarcassonneState)
    assert decoded.codes == state.codes and decoded.codes_pictures == PICTURES
    assert current_rotation(TILE_INDEX["H"], 0, 1) == 1 and current_rotation(0, 2, 1) == 2
    with pytest.raises(ValueError, match="pictures version 7"):
        current_rotation(0, 0, 7)


# ---------------------------------------------------------------------------- schema


# ---------------------------------------------------------------------------- the expansions

EXPANSIONS = {"inns_cathedrals": True, "traders_builders": True}


@pytest.mark.parametrize(
    ("seats", "options"),
    [(2, EXPANSIONS), (6, {"inns_cathedrals": True}), (3, {**EXPANSIONS, **MESSENGERS})],
)
def test_an_expansions_match_round_trips_event_for_event(seats, options):
    """Their tiles, the large follower, builder and pig (``piece``), builder turns, goods and
    the final bonuses: the replay is the same log, the final points include the bonuses."""
    pieces: set[str] = set()
    for seed in range(6):
        events = random_game(seats, seed, options)
        document = exported(events)
        for name in EXPANSIONS:
            assert document.get(name, False) is bool(options.get(name))
        placements = [turn for turn in document["turns"] if turn["kind"] == "placement"]
        pieces |= {t["follower"].get("piece", "follower") for t in placements if t["follower"]}
        if not options.get("messengers"):
            final = document["turns"][-1]
            totals = [sum(t["points"][seat] for t in [*placements, final]) for seat in range(seats)]
            assert totals == final["scores"] == events[-1].scores
        assert replayed_events(document) == events, f"seed {seed}"
    expected = {"follower", "large_follower"}
    if options.get("traders_builders"):
        expected |= {"builder", "pig"}
    assert pieces == expected


def test_the_committed_schema_is_current_and_exports_follow_it():
    committed = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert committed == turn_list.json_schema(), "run: playtable openapi"
    jsonschema.Draft202012Validator.check_schema(committed)
    validator = jsonschema.Draft202012Validator(committed)
    for seats, options in ((2, {}), (3, MESSENGERS), (2, {**EXPANSIONS, **MESSENGERS})):
        document = exported(random_game(seats, 1, options))
        validator.validate(document)
    bad = {"game": "carcassonne", "players": ["a"], "turns": [{"kind": "start", "tile": "Z"}]}
    assert not validator.is_valid(bad)
    refused = imported(bad)
    assert isinstance(refused, api.Rejected) and "tile" in refused.detail
