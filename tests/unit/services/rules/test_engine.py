"""The rules service's request handling, without Redis: decode, call the engine, encode."""

from __future__ import annotations

import random
from typing import Any

import msgspec

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.games.playout import random_game, random_playout
from shared.domain import rules_api as api

ENGINE = RulesEngine(load_games())


def roundtrip(reply: object, reply_type: object) -> object:
    """What a caller decodes from the reply the worker would send."""
    return msgspec.json.decode(msgspec.json.encode(reply), type=reply_type)


def set_up(seed: int = 1, seats: int = 2, **options: object) -> api.SetUpDone:
    reply = ENGINE.handle(api.SetUp(game="hanabi", options=dict(options), seats=seats, seed=seed))
    assert isinstance(reply, api.SetUpDone)
    return roundtrip(reply, api.SetUpDone)  # type: ignore[return-value]


def test_catalogue_lists_options_and_action_schema() -> None:
    (hanabi,) = [game for game in ENGINE.handle(api.Catalogue()) if game["name"] == "hanabi"]
    assert (hanabi["min_players"], hanabi["max_players"]) == (2, 5)
    options = {option["name"]: option for option in hanabi["options"]}
    assert options["suits"]["default"] == 5 and options["suits"]["choices"] == [5, 6]
    assert options["deck"]["secret"] is True
    assert "PlayCard" in msgspec.json.encode(hanabi["action_schema"]).decode()


def test_options_resolved_with_defaults_or_refused() -> None:
    resolved = ENGINE.handle(api.ResolveOptions(game="hanabi", options={}, seats=3))
    assert resolved["suits"] == 5 and resolved["empty_clues"] is False
    refused = ENGINE.handle(api.ResolveOptions(game="hanabi", options={"colours": 3}, seats=3))
    assert isinstance(refused, api.Rejected) and refused.code == "unknown_option"
    too_many = ENGINE.handle(api.ResolveOptions(game="hanabi", options={}, seats=6))
    assert isinstance(too_many, api.Rejected) and too_many.code == "bad_seat_count"


def test_same_seed_same_events_and_public_events_hide_the_deck() -> None:
    first, second, other = set_up(42), set_up(42), set_up(43)
    assert [bytes(e.data) for e in first.events] == [bytes(e.data) for e in second.events]
    assert bytes(first.events[0].data) != bytes(other.events[0].data)
    assert b'"deck"' in bytes(first.events[0].data)
    assert all(b'"deck"' not in bytes(raw) for raw in first.public_events)


def test_decide_accepts_a_legal_action_and_rejects_garbage() -> None:
    done = set_up(7)
    legal = ENGINE.handle(api.ListLegalActions(game="hanabi", state=done.progress.state, seat=0))
    action = msgspec.Raw(msgspec.json.encode(legal[0]))
    decided = ENGINE.handle(
        api.Decide(game="hanabi", state=done.progress.state, seat=0, action=action)
    )
    assert isinstance(decided, api.Decided)
    assert decided.progress.to_move == [1]
    assert len(decided.events) == len(decided.actor_events) == len(decided.public_events) >= 1
    wrong_seat = ENGINE.handle(
        api.Decide(game="hanabi", state=done.progress.state, seat=1, action=action)
    )
    assert isinstance(wrong_seat, api.Rejected)
    garbage = ENGINE.handle(
        api.Decide(
            game="hanabi", state=done.progress.state, seat=0, action=msgspec.Raw(b'{"type":"Fly"}')
        )
    )
    assert isinstance(garbage, api.Rejected) and garbage.code == "invalid_request"


def test_fold_of_stored_events_equals_the_state_reached_in_play() -> None:
    game = load_games()["hanabi"]
    done = set_up(3)
    state_bytes = done.progress.state
    events = [e.data for e in done.events]
    rng = random.Random(3)
    while True:
        state = msgspec.msgpack.decode(state_bytes, type=game.state_type)
        if game.result(state) is not None:
            break
        seat = game.to_move(state)[0]
        action = msgspec.Raw(msgspec.json.encode(rng.choice(game.legal_actions(state, seat))))
        decided = ENGINE.handle(
            api.Decide(game="hanabi", state=state_bytes, seat=seat, action=action)
        )
        events += [e.data for e in decided.events]
        state_bytes = decided.progress.state
    folded = ENGINE.handle(api.Fold(game="hanabi", events=events))
    assert folded.state == state_bytes


def test_export_and_import_round_trip() -> None:
    game = load_games()["hanabi"]
    events, state = random_game(game, 3, random.Random(5))
    raws = [msgspec.Raw(msgspec.json.encode(event)) for event in events]
    document = ENGINE.handle(api.ExportMatch(game="hanabi", events=raws, players=["a", "b", "c"]))
    imported = ENGINE.handle(
        api.ImportMatch(game="hanabi", document=msgspec.Raw(msgspec.json.encode(document)))
    )
    assert isinstance(imported, api.Imported)
    assert imported.players == ["a", "b", "c"]
    assert imported.progress.result == msgspec.to_builtins(game.result(state))
    assert len(imported.events) == len(events)
    broken = ENGINE.handle(api.ImportMatch(game="hanabi", document=msgspec.Raw(b'{"players": 3}')))
    assert isinstance(broken, api.Rejected) and broken.code == "invalid_document"


def test_random_playout_driver_reaches_the_end() -> None:
    game = load_games()["hanabi"]
    _, outcome, moves = random_playout(game, 4, random.Random(1))
    assert moves > 0 and len(outcome.scores) == 4


def test_timed_actions_carry_the_server_clock_not_the_clients() -> None:
    from services.rules.engine import _stamp_server_time
    from services.rules.games.breaking_news.events import TellStory

    told = TellStory(story="a", language="en", server_time_ms=1)
    stamped = _stamp_server_time(told)
    assert stamped.server_time_ms > 1_700_000_000_000
    assert _stamp_server_time(api.Catalogue()) == api.Catalogue()


def exported_carcassonne(seed: int) -> tuple[dict[str, Any], Any]:
    """A random two-player Carcassonne match played to the end and exported as its turn list
    by the engine, with its result."""
    game = load_games()["carcassonne"]
    events, state = random_game(game, 2, random.Random(seed))
    raws = [msgspec.Raw(msgspec.json.encode(event)) for event in events]
    document = ENGINE.handle(api.ExportMatch(game="carcassonne", events=raws, players=["a", "b"]))
    return document, msgspec.to_builtins(game.result(state))


def test_carcassonne_turn_list_round_trip_and_refusals() -> None:
    document, outcome = exported_carcassonne(seed=12)
    assert document["messengers"] is False and document["turns"][0]["tile"] == "D"
    imported = ENGINE.handle(
        api.ImportMatch(game="carcassonne", document=msgspec.Raw(msgspec.json.encode(document)))
    )
    assert isinstance(imported, api.Imported)
    assert imported.progress.result == outcome
    older_messengers = {**document, "format_version": 1, "messengers": True}
    for broken in ({"game": "chess"}, older_messengers, {**document, "players": 3}):
        refused = ENGINE.handle(
            api.ImportMatch(game="carcassonne", document=msgspec.Raw(msgspec.json.encode(broken)))
        )
        assert isinstance(refused, api.Rejected) and refused.code == "invalid_document"


def test_a_carcassonne_turn_list_must_agree_with_its_replay_where_it_declares() -> None:
    """Declared seats, points and final figures are checked against the replay: the first
    that differs is named; left out, nothing is checked."""
    document, _ = exported_carcassonne(seed=5)
    turns = document["turns"]
    scoring = next(n for n, t in enumerate(turns) if t["kind"] == "placement" and any(t["points"]))

    def imported(changed: list[dict]) -> object:
        forged = msgspec.json.encode({**document, "turns": changed})
        return ENGINE.handle(api.ImportMatch(game="carcassonne", document=msgspec.Raw(forged)))

    inflated = [dict(t) for t in turns]
    inflated[scoring]["points"] = [999, 0]
    refused = imported(inflated)
    assert isinstance(refused, api.Rejected) and refused.code == "invalid_document"
    assert f"turn {scoring + 1} (placement) declares points [999, 0]" in refused.detail
    final = [*turns[:-1], {**turns[-1], "scores": [0, 0]}]
    assert "declares scores [0, 0]" in imported(final).detail
    other_seat = [dict(t) for t in turns]
    other_seat[1]["seat"] = 1 - other_seat[1]["seat"]
    assert "turn 2 (placement) declares seat" in imported(other_seat).detail
    bare = [
        {k: v for k, v in t.items() if k not in ("points", "seat", "scores")}
        for t in turns
        if t["kind"] != "final"
    ]
    assert isinstance(imported(bare), api.Imported)  # nothing declared, nothing to disagree


def test_a_decision_carries_the_legal_actions_every_seat_to_move_would_be_listed() -> None:
    """What the match service answers ``GET /actions`` with after a move must be exactly what
    asking the rules would give, in every game, all along random matches."""
    for name in ENGINE.codecs:
        game = ENGINE.codec(name).game
        for seed in range(3):
            rng = random.Random(seed)
            done = ENGINE.handle(
                api.SetUp(game=name, options={}, seats=game.min_players, seed=seed)
            )
            state = done.progress.state
            for _ in range(60):
                listed = {
                    seat: ENGINE.handle(api.ListLegalActions(game=name, state=state, seat=seat))
                    for seat in range(game.min_players)
                }
                movers = [seat for seat, actions in listed.items() if actions]
                if not movers:
                    break
                mover = rng.choice(movers)
                action = msgspec.Raw(msgspec.json.encode(rng.choice(listed[mover])))
                decided = roundtrip(
                    ENGINE.handle(api.Decide(game=name, state=state, seat=mover, action=action)),
                    api.Decided,
                )
                state = decided.progress.state
                for seat in range(game.min_players):
                    expected = msgspec.json.encode(
                        ENGINE.handle(api.ListLegalActions(game=name, state=state, seat=seat))
                    )
                    carried = decided.legal_actions.get(seat, [])
                    assert msgspec.json.encode(carried) == expected, (name, seed, seat)


def test_a_story_longer_than_the_contract_allows_is_refused_with_where() -> None:
    """The contract's ``maxLength`` on a Breaking News story is the engine's own limit: one
    character more is an invalid action that says which field, without echoing the story."""
    reply = ENGINE.handle(api.SetUp(game="breaking_news", options={}, seats=2, seed=1))
    assert isinstance(reply, api.SetUpDone)
    story = "ü" * 2001
    action = {"type": "TellStory", "story": story}
    refused = ENGINE.handle(
        api.Decide(
            game="breaking_news",
            state=reply.progress.state,
            seat=0,
            action=msgspec.Raw(msgspec.json.encode(action)),
        )
    )
    assert isinstance(refused, api.Rejected) and refused.code == "invalid_request"
    assert "2000" in refused.detail and "$.story" in refused.detail
    assert "ü" not in refused.detail
