"""Breaking News endings, scoring, tie-breaks, the optional rules, the record and the API."""

from __future__ import annotations

import msgspec

from services.rules.engine import RulesEngine
from services.rules.games.breaking_news import GAME
from services.rules.games.breaking_news.cards import NEWS, OBJECT_POINTS, PLAY, STORY
from services.rules.games.breaking_news.events import (
    BreakingNewsCalled,
    CallBreakingNews,
    CompleteObject,
    DecksShuffled,
    ElementDrawn,
    EndTurn,
    FinalRoundStarted,
    GameEnded,
    ObjectCompleted,
    PassTurn,
    PlaceCard,
    ReportSilence,
    StoryInterrupted,
    TellStory,
    TurnEnded,
    VoteCast,
    VoteForStory,
    VotingOpened,
)
from services.rules.games.breaking_news.state import ELEMENT_CARDS
from shared.domain import rules_api as api
from tests.unit.services.rules.games.breaking_news.test_rules import (
    EAST,
    MIDDLE,
    OBJECT,
    ROW,
    WEST,
    act,
    deal,
    fillers,
    kinds,
    refused,
    story_for,
)

CHAIN = [EAST, MIDDLE, WEST]
VALUE = OBJECT_POINTS[OBJECT]


def past_completion(seat: int, obj: int, points: int) -> ObjectCompleted:
    """An earlier completion of an object from the seat's hand (its cards do not matter)."""
    return ObjectCompleted(seat, obj, [0, 1, 2], "an earlier story", None, points, False)


def row_deal(
    seats: int,
    object_hands: list[list[int]] | None = None,
    history: tuple = (),
    element_deck: list[int] | None = None,
    **options,
):
    """The object's west and middle cards on the table, seat 0 to play the east card."""
    hands = [[EAST, *fillers(2, ROW)]]
    for _ in range(1, seats):
        hands.append(fillers(3, set(ROW) | {card for hand in hands for card in hand}))
    if object_hands is None:
        object_hands = [[10 + seat] for seat in range(seats)]
    state, events = deal(
        {(-1, 0): WEST, (0, 0): MIDDLE},
        hands,
        [OBJECT, 0],
        object_hands,
        element_deck=element_deck,
        history=history,
        **options,
    )
    return state, events


def quiet_turn(state) -> list:
    """The seat to move places its first placeable card and tells no news (or passes)."""
    seat = state.seat_to_move
    actions = GAME.legal_actions(state, seat)
    place = next((a for a in actions if isinstance(a, PlaceCard)), PassTurn())
    events = act(state, seat, place)
    if state.phase == NEWS:
        events += act(state, seat, EndTurn())
    return events


def complete_row(state) -> list:
    events = act(state, 0, PlaceCard(EAST, 1, 0))
    return events + act(state, 0, CompleteObject(OBJECT, CHAIN, story_for(CHAIN)))


# --- End conditions -------------------------------------------------------------------------


def test_a_third_completion_gives_every_other_seat_one_more_turn():
    history = (past_completion(0, 10, 1), past_completion(0, 11, 2))
    state, _ = row_deal(3, [[10, 11], [12], [13]], history)
    events = complete_row(state)
    assert FinalRoundStarted(0, "objects_completed") in events
    assert kinds(events)[-1] == "TurnEnded" and GAME.result(state) is None
    assert GAME.view(state, 1).turns_left == 2
    quiet_turn(state)
    assert GAME.to_move(state) == [2] and GAME.result(state) is None
    last = quiet_turn(state)
    assert last[-1] == GameEnded("objects_completed", [1 + 2 + VALUE, 0, 0], [0], [])
    outcome = GAME.result(state)
    assert outcome.winners == [0] and outcome.reason == "objects_completed"
    assert GAME.to_move(state) == [] and GAME.legal_actions(state, 0) == []
    assert refused(state, 0, PassTurn()).code == "game_over"


def test_with_two_players_the_fourth_completion_ends_the_game():
    history = (past_completion(0, 10, 1), past_completion(0, 11, 1))
    state, _ = row_deal(2, [[10, 11], [12]], history)
    assert not any(isinstance(e, FinalRoundStarted) for e in complete_row(state))
    history += (past_completion(0, 13, 1),)
    state, _ = row_deal(2, [[10, 11, 13], [12]], history)
    assert FinalRoundStarted(0, "objects_completed") in complete_row(state)
    assert kinds(quiet_turn(state))[-1] == "GameEnded"


def test_an_empty_element_deck_after_a_placement_starts_the_final_round():
    state, _ = row_deal(3, element_deck=[2, 3])
    quiet_turn(state)  # seat 0 draws card 2
    quiet_turn(state)  # seat 1 draws card 3, the last
    events = quiet_turn(state)
    assert events[-2:] == [FinalRoundStarted(2, "deck_empty"), TurnEnded(2)]
    assert not any(isinstance(event, ElementDrawn) for event in events)
    quiet_turn(state)
    assert GAME.result(state) is None
    assert kinds(quiet_turn(state))[-1] == "GameEnded"  # seat 1's extra turn was the last
    assert GAME.result(state).reason == "deck_empty"
    assert [len(hand) for hand in state.hands] == [2, 2, 2]


def test_passing_round_after_round_ends_in_a_stalemate():
    state, _ = row_deal(2, element_deck=[2, 3, 4])  # stalemate after 2 + ceil(3 / 3) passes
    act(state, 0, PassTurn())
    act(state, 1, PassTurn())
    events = act(state, 0, PassTurn())
    assert events[-1] == GameEnded("stalemate", [0, 0], [0, 1], ["objects_in_hand"])
    state, _ = row_deal(2, element_deck=[2, 3, 4])
    act(state, 0, PassTurn())
    quiet_turn(state)  # a placement breaks the run of passes
    act(state, 0, PassTurn())
    assert state.passes_in_a_row == 1 and GAME.result(state) is None


# --- Tie-breaks -----------------------------------------------------------------------------


def tied_at_the_end(seats: int, object_hands: list[list[int]], **options):
    """Seats 0 and 1 each completed a 2-point object; the deck is empty; play to the end."""
    history = (past_completion(0, 10, 2), past_completion(1, 11, 2))
    state, events = row_deal(seats, object_hands, history, element_deck=[], **options)
    while state.phase == PLAY:
        events += quiet_turn(state)
    return state, events


def test_a_tie_is_broken_by_the_other_players_vote():
    state, events = tied_at_the_end(3, [[10, 12], [11], [13]])
    assert events[-1] == VotingOpened("deck_empty", [0, 1], [2], [0, 1])
    assert GAME.to_move(state) == [2] and GAME.result(state) is None
    assert GAME.legal_actions(state, 2) == [VoteForStory(0), VoteForStory(1)]
    assert refused(state, 0, VoteForStory(1)).code == "not_a_voter"
    assert refused(state, 2, VoteForStory(7)).code == "not_a_candidate"
    assert GAME.view(state, None).voting.stories == [0, 1]
    decided = act(state, 2, VoteForStory(1))
    assert decided == [VoteCast(2, 1), GameEnded("deck_empty", [2, 2, 0], [1], ["vote"])]
    assert GAME.result(state).winners == [1]


def test_a_split_vote_falls_back_to_objects_in_hand():
    state, _ = tied_at_the_end(4, [[10], [11, 12], [13], [14]])
    assert state.voters == [2, 3]
    act(state, 2, VoteForStory(0))
    assert refused(state, 2, VoteForStory(1)).code == "already_voted"
    assert GAME.to_move(state) == [3]
    events = act(state, 3, VoteForStory(1))
    assert events[-1] == GameEnded("deck_empty", [2, 2, 0, 0], [1], ["vote", "objects_in_hand"])


def test_without_voters_or_by_option_the_tie_goes_to_objects_in_hand_or_is_shared():
    state, events = tied_at_the_end(2, [[10], [11, 12]])
    assert events[-1] == GameEnded("deck_empty", [2, 2], [1], ["objects_in_hand"])
    state, events = tied_at_the_end(3, [[10, 12], [11], [13]], tiebreak="objects_in_hand")
    assert events[-1] == GameEnded("deck_empty", [2, 2, 0], [0], ["objects_in_hand"])
    state, events = tied_at_the_end(2, [[10, 12], [11, 13]])
    assert events[-1].winners == [0, 1]  # still tied: both win


# --- Optional rules -------------------------------------------------------------------------


def test_foreign_language_bonus_for_a_story_declared_in_another_language():
    options = {"foreign_language_bonus": True, "home_languages": ["de", "it"]}
    for language, points in (("it", VALUE + 1), ("en", VALUE + 1), ("de", VALUE), (None, VALUE)):
        state, _ = row_deal(2, **options)
        act(state, 0, PlaceCard(EAST, 1, 0))
        offered = [a for a in GAME.legal_actions(state, 0) if isinstance(a, CompleteObject)]
        assert sorted(a.language for a in offered) == ["de", "en", "it"]
        story = story_for(CHAIN, language or "de")
        events = act(state, 0, CompleteObject(OBJECT, CHAIN, story, language))
        assert events[0].points == points and events[0].language == language
    state, _ = row_deal(2, **options)
    act(state, 0, PlaceCard(EAST, 1, 0))
    german = CompleteObject(OBJECT, CHAIN, story_for(CHAIN, "de"), "it")
    rejection = refused(state, 0, german)
    assert rejection.code == "word_missing" and "told in it" in rejection.detail


def called(at_ms: int = 1_000):
    state, _ = row_deal(2, stopwatch=True)
    act(state, 0, PlaceCard(EAST, 1, 0))
    assert refused(state, 0, CompleteObject(OBJECT, CHAIN, story_for(CHAIN))).code == "call_first"
    assert CallBreakingNews(OBJECT, CHAIN) in GAME.legal_actions(state, 0)
    events = act(state, 0, CallBreakingNews(OBJECT, [WEST, MIDDLE, EAST], server_time_ms=at_ms))
    assert events == [BreakingNewsCalled(0, OBJECT, CHAIN, at_ms)]
    return state


def test_stopwatch_times_the_story_from_the_call_by_the_server_clock():
    for seconds, points in ((14.999, VALUE - 1), (15, VALUE), (30, VALUE), (30.001, VALUE + 1)):
        state = called(1_000)
        assert state.phase == STORY and GAME.to_move(state) == [0]  # the teller, waited on
        assert GAME.acting(state, [0]) == [0, 1]  # the listener may report silence
        assert GAME.view(state, 1).called_news.cards == CHAIN
        told_at = 1_000 + round(seconds * 1000)
        events = act(state, 0, TellStory(story_for(CHAIN), server_time_ms=told_at))
        assert events[0].points == points and events[0].duration_ms == told_at - 1_000
        assert state.scores[0] == points and state.phase == PLAY


def test_stopwatch_story_rules_and_silence():
    state = called()
    assert GAME.legal_actions(state, 1) == [ReportSilence()]
    assert refused(state, 1, TellStory(story_for(CHAIN))).code == "not_your_story"
    assert refused(state, 0, TellStory("nothing", server_time_ms=9_000)).code == "word_missing"
    assert state.phase == STORY  # the teller may go on
    events = act(state, 1, ReportSilence())
    assert events[0] == StoryInterrupted(0, 1)
    assert kinds(events[1:]) == ["ElementDrawn", "TurnEnded"]
    assert state.completed == [0, 0] and OBJECT in state.open_objects
    assert GAME.to_move(state) == [1]
    plain, _ = row_deal(2)
    act(plain, 0, PlaceCard(EAST, 1, 0))
    assert refused(plain, 0, CallBreakingNews(OBJECT, CHAIN)).code == "no_stopwatch"


# --- The record, secrecy and the API --------------------------------------------------------


def test_stories_are_in_the_event_log_and_survive_a_replay_from_json():
    state, events = row_deal(2)
    events += complete_row(state)
    encoded = [msgspec.json.encode(event) for event in events]
    decoded = [msgspec.json.decode(raw, type=GAME.event_type) for raw in encoded]
    replayed = GAME.fold(decoded)
    assert msgspec.msgpack.encode(replayed) == msgspec.msgpack.encode(state)
    assert replayed.stories[0].story == story_for(CHAIN)
    completed = next(e for e in events if isinstance(e, ObjectCompleted))
    assert GAME.redact(completed, None) == completed
    assert GAME.view(state, None).stories[0].story == story_for(CHAIN)


def test_views_and_redacted_events_never_show_other_hands_or_the_decks():
    state, events = row_deal(3)
    for seat in (1, 2, None):
        public = [GAME.redact(event, seat) for event in events]
        assert isinstance(public[0], DecksShuffled) and public[0].element_cards == 35
        raw = msgspec.json.encode(public).decode()
        assert "element_deck" not in raw and "object_deck" not in raw
        drawn = [e for e in public if isinstance(e, ElementDrawn) and e.seat == 0]
        assert len(drawn) == 3 and all(e.card is None for e in drawn)
        view = GAME.view(state, seat)
        assert view.hand == (
            None if seat is None else [ELEMENT_CARDS[c] for c in state.hands[seat]]
        )
        assert view.hand_sizes == [3, 3, 3] and view.object_hand_sizes == [1, 1, 1]
        assert 'element_deck"' not in msgspec.json.encode(view).decode()
    own = [GAME.redact(event, 0) for event in events]
    assert [e.card for e in own if isinstance(e, ElementDrawn) and e.seat == 0] == state.hands[0]


def test_a_match_runs_through_the_rules_service_requests():
    engine = RulesEngine({"breaking_news": GAME})
    options = {"tiebreak": "vote", "mode": "advanced"}
    done = engine.handle(api.SetUp(game="breaking_news", options=options, seats=3, seed=4))
    assert isinstance(done, api.SetUpDone) and done.progress.to_move == [0]
    assert all(b"element_deck" not in bytes(raw) for raw in done.public_events)
    state = done.progress.state
    for _ in range(6):
        seat = msgspec.msgpack.decode(state, type=GAME.state_type).seat_to_move
        legal = engine.handle(api.ListLegalActions(game="breaking_news", state=state, seat=seat))
        action = msgspec.Raw(msgspec.json.encode(legal[-1]))
        decided = engine.handle(
            api.Decide(game="breaking_news", state=state, seat=seat, action=action)
        )
        assert isinstance(decided, api.Decided), decided
        state = decided.progress.state
    view = engine.handle(api.ShowView(game="breaking_news", state=state, seat=None))
    assert view.seat is None and view.hand is None and len(view.table) >= 3
    seat = msgspec.msgpack.decode(state, type=GAME.state_type).seat_to_move
    vote = msgspec.Raw(b'{"type": "VoteForStory", "story": 0}')
    refused_vote = engine.handle(
        api.Decide(game="breaking_news", state=state, seat=seat, action=vote)
    )
    assert isinstance(refused_vote, api.Rejected) and refused_vote.code == "wrong_phase"
