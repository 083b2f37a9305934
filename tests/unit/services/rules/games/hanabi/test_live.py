"""hanab.live JSON: export our games, import theirs, and replay them through the engine."""

from __future__ import annotations

import json
import random

import pytest

from services.rules.games.contract import Rejection
from services.rules.games.hanabi import GAME
from services.rules.games.hanabi.live import (
    ImportedGame,
    LiveFormatError,
    export_events,
    export_game,
    import_game,
    variant_name,
)
from services.rules.games.hanabi.state import (
    DiscardCard,
    GiveColourClue,
    GiveRankClue,
    HanabiState,
    PlayCard,
)

# A two-player "No Variant" game written the way hanab.live stores it. Alice holds orders 0-4
# (R1 Y1 B3 P2 G4), Bob orders 5-9 (G1 R2 Y5 P1 B1); the draw pile starts R3 Y2 G2 P3 R4 B2.
HAND_WRITTEN = """
{
  "players": ["Alice", "Bob"],
  "deck": [
    {"suitIndex": 0, "rank": 1}, {"suitIndex": 1, "rank": 1}, {"suitIndex": 3, "rank": 3},
    {"suitIndex": 4, "rank": 2}, {"suitIndex": 2, "rank": 4}, {"suitIndex": 2, "rank": 1},
    {"suitIndex": 0, "rank": 2}, {"suitIndex": 1, "rank": 5}, {"suitIndex": 4, "rank": 1},
    {"suitIndex": 3, "rank": 1}, {"suitIndex": 0, "rank": 3}, {"suitIndex": 1, "rank": 2},
    {"suitIndex": 2, "rank": 2}, {"suitIndex": 4, "rank": 3}, {"suitIndex": 0, "rank": 4},
    {"suitIndex": 3, "rank": 2}, {"suitIndex": 0, "rank": 2}, {"suitIndex": 0, "rank": 1},
    {"suitIndex": 1, "rank": 3}, {"suitIndex": 2, "rank": 1}, {"suitIndex": 1, "rank": 3},
    {"suitIndex": 4, "rank": 4}, {"suitIndex": 1, "rank": 4}, {"suitIndex": 3, "rank": 1},
    {"suitIndex": 0, "rank": 3}, {"suitIndex": 0, "rank": 1}, {"suitIndex": 3, "rank": 4},
    {"suitIndex": 0, "rank": 5}, {"suitIndex": 2, "rank": 4}, {"suitIndex": 4, "rank": 2},
    {"suitIndex": 0, "rank": 4}, {"suitIndex": 4, "rank": 5}, {"suitIndex": 2, "rank": 3},
    {"suitIndex": 4, "rank": 1}, {"suitIndex": 4, "rank": 4}, {"suitIndex": 2, "rank": 2},
    {"suitIndex": 3, "rank": 1}, {"suitIndex": 1, "rank": 1}, {"suitIndex": 2, "rank": 3},
    {"suitIndex": 1, "rank": 2}, {"suitIndex": 3, "rank": 5}, {"suitIndex": 3, "rank": 2},
    {"suitIndex": 3, "rank": 4}, {"suitIndex": 2, "rank": 1}, {"suitIndex": 3, "rank": 3},
    {"suitIndex": 4, "rank": 1}, {"suitIndex": 1, "rank": 1}, {"suitIndex": 2, "rank": 5},
    {"suitIndex": 1, "rank": 4}, {"suitIndex": 4, "rank": 3}
  ],
  "actions": [
    {"type": 3, "target": 1, "value": 1},
    {"type": 2, "target": 0, "value": 0},
    {"type": 0, "target": 0},
    {"type": 0, "target": 5},
    {"type": 0, "target": 3},
    {"type": 0, "target": 8},
    {"type": 2, "target": 1, "value": 4},
    {"type": 0, "target": 9},
    {"type": 1, "target": 2}
  ],
  "options": {"variant": "No Variant"},
  "notes": [["chop"], []],
  "id": 123456,
  "seed": "p2v0s1"
}
"""


def replay(imported: ImportedGame) -> tuple[HanabiState, list]:
    """Set the imported game up on its explicit deck and replay its actions in turn."""
    seats = len(imported.players)
    resolved = GAME.resolve_options(imported.options, seats)
    assert not isinstance(resolved, Rejection), resolved
    log = GAME.setup(resolved, seats, random.Random())
    state = GAME.fold(log)
    for action in imported.actions:
        seat = GAME.to_move(state)[0]
        events = GAME.decide(state, seat, action)
        assert not isinstance(events, Rejection), (action, events)
        state = GAME.fold(events, state)
        log += events
    return state, log


def test_a_hand_written_hanab_live_game_replays():
    imported = import_game(HAND_WRITTEN)
    assert imported.players == ["Alice", "Bob"] and imported.seed == "p2v0s1"
    assert imported.options["suits"] == 5 and not imported.options["rainbow"]
    assert imported.options["deck"][:6] == [1, 11, 33, 42, 24, 21]  # P2 is our white 2
    assert imported.actions[:2] == [GiveRankClue(1, 1), GiveColourClue(0, "red")]
    assert imported.actions[6] == GiveColourClue(1, "white")
    assert imported.actions[-1] == DiscardCard(2) and not imported.terminated
    state, _ = replay(imported)
    assert state.fireworks == [1, 0, 1, 1, 1] and state.score == 4
    assert state.fuses_burned == 1 and state.clue_tokens == 6
    assert state.discards == [3, 2]
    assert state.hands == [[1, 4, 10, 12, 15], [6, 7, 11, 13, 14]]
    assert GAME.to_move(state) == [1] and state.turns == 9
    bob = {card.order: card for card in GAME.view(state, 1).hands[1]}
    assert bob[7].excluded_ranks == (1,) and bob[7].excluded_colours == ("white",)
    assert bob[13].clued_colours == ("white",) and bob[13].suit is None
    assert GAME.view(state, 0).hands[1][3].suit == "white"


def test_export_of_an_imported_game_gives_back_the_document():
    document = json.loads(HAND_WRITTEN)
    imported = import_game(document)
    exported = export_game(
        imported.options,
        imported.players,
        imported.options["deck"],
        imported.actions,
        imported.seed,
    )
    del document["notes"], document["id"]
    assert exported == document


@pytest.mark.parametrize(
    ("options", "variant"),
    [
        ({}, "No Variant"),
        ({"suits": 6}, "6 Suits"),
        ({"rainbow": True}, "Rainbow (6 Suits)"),
        ({"rainbow_short": True, "empty_clues": True}, "Dark Rainbow (6 Suits)"),
    ],
)
def test_random_games_survive_export_import_and_replay(options, variant):
    rng = random.Random(variant)
    assert variant_name(options) == variant
    for game in range(40):
        seats = 2 + game % 4
        resolved = GAME.resolve_options(options, seats)
        log = GAME.setup(resolved, seats, rng)
        state = GAME.fold(log)
        actions = []
        while GAME.result(state) is None:
            seat = GAME.to_move(state)[0]
            action = rng.choice(GAME.legal_actions(state, seat))
            events = GAME.decide(state, seat, action)
            state = GAME.fold(events, state)
            actions.append(action)
            log += events
        players = [f"player{seat}" for seat in range(seats)]
        document = export_game(resolved, players, log[0].deck, actions, seed=f"g{game}")
        assert document["options"]["variant"] == variant
        assert document["options"].get("emptyClues", False) == resolved["empty_clues"]
        assert len(document["deck"]) == len(log[0].deck)
        assert export_events(log, players, seed=f"g{game}") == document
        imported = import_game(json.dumps(document))
        assert imported.actions == actions
        replayed, replayed_log = replay(imported)
        assert replayed == state and replayed_log == log
        assert GAME.result(replayed) == GAME.result(state)


def test_colour_clue_values_follow_the_variants_clue_colours():
    clues = [GiveColourClue(1, "white"), GiveColourClue(1, "multicolour"), GiveRankClue(0, 4)]
    exported = export_game({"suits": 6}, ["a", "b"], [], clues)
    assert exported["actions"] == [
        {"type": 2, "target": 1, "value": 4},
        {"type": 2, "target": 1, "value": 5},
        {"type": 3, "target": 0, "value": 4},
    ]
    rainbow = json.loads(HAND_WRITTEN)
    rainbow["options"]["variant"] = "Rainbow (6 Suits)"
    rainbow["deck"] += [{"suitIndex": 5, "rank": rank} for rank in (1, 1, 1, 2, 2, 3, 3, 4, 4, 5)]
    rainbow["actions"] = [{"type": 2, "target": 1, "value": 5}]
    with pytest.raises(LiveFormatError, match="not a clue colour"):
        import_game(rainbow)


def test_a_terminated_game_keeps_the_actions_before_the_end():
    document = json.loads(HAND_WRITTEN)
    document["actions"][3:] = [{"type": 4, "target": 1, "value": 4}, {"type": 0, "target": 1}]
    imported = import_game(document)
    assert imported.terminated and len(imported.actions) == 3
    state, _ = replay(imported)
    assert GAME.result(state) is None and state.fireworks[0] == 1


def changed(**edits) -> dict:
    document = json.loads(HAND_WRITTEN)
    for key, value in edits.items():
        document[key] = value
    return document


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (changed(options={"variant": "Black (6 Suits)"}), "variant 'Black \\(6 Suits\\)'"),
        (changed(options={"variant": "No Variant", "oneExtraCard": True}), "one_extra_card"),
        (changed(options={"startingPlayer": 1}), "starting_player"),
        (changed(players=["a", "b", "c", "d", "e", "f"]), "6 players"),
        (changed(deck=[{"suitIndex": 0, "rank": 1}] * 50), "too many copies"),
        (changed(deck=[{"suitIndex": 5, "rank": 1}] * 50), "outside the suits"),
        (changed(actions=[{"type": 7, "target": 0}]), "unknown action type 7"),
        (changed(actions=[{"type": 3, "target": 0}]), "rank clue without a value"),
        (changed(deck="none"), "not a hanab.live game"),
        ("{not json", "not JSON"),
    ],
)
def test_documents_this_engine_cannot_replay_are_refused(document, message):
    with pytest.raises(LiveFormatError, match=message):
        import_game(document)


def test_illegal_moves_in_a_document_surface_when_replayed():
    document = changed(actions=[{"type": 1, "target": 0}])  # discard at 8 clue tokens
    imported = import_game(document)
    state = GAME.fold(GAME.setup(GAME.resolve_options(imported.options, 2), 2, None))
    rejection = GAME.decide(state, 0, imported.actions[0])
    assert isinstance(rejection, Rejection) and rejection.code == "clue_tokens_full"
    assert not isinstance(GAME.decide(state, 0, PlayCard(0)), Rejection)
