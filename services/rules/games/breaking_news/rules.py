"""Breaking News' rules of play: ``decide``, the legal actions, who moves, the result."""

from __future__ import annotations

from typing import Any

import msgspec

from services.rules.games.breaking_news.cards import (
    COLOURS,
    EDGE_CODE,
    EDGES,
    LANGUAGES,
    NEWS,
    OBJECT_HAND_LIMIT,
    OBJECT_MASK,
    OBJECT_SYMBOLS,
    OPPOSITE,
    OVER,
    PLAY,
    REACH,
    SIDES,
    START_HAND,
    STEPS,
    STORY,
    SYMBOLS,
    VOTE,
    XY,
    cell_of,
    completions_to_end,
)
from services.rules.games.breaking_news.events import (
    BreakingNewsCalled,
    CallBreakingNews,
    CardPlaced,
    CardTurnedFaceDown,
    CompleteObject,
    ElementDrawn,
    EndTurn,
    FinalRoundStarted,
    GameEnded,
    HandReturned,
    ObjectCompleted,
    ObjectDrawn,
    ObjectOpened,
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
from services.rules.games.breaking_news.evolve import evolve, fits
from services.rules.games.breaking_news.news import (
    canonical_story,
    chain_mask,
    chains_through,
    news_possible,
    stopwatch_adjustment,
    story_points,
    story_problem,
)
from services.rules.games.breaking_news.state import BreakingNewsState
from services.rules.games.breaking_news.versions import RULES
from services.rules.games.contract import (
    Outcome,
    Rejection,
)


def _decide_place(state: BreakingNewsState, seat: int, action: PlaceCard) -> list | Rejection:
    card, x, y = action.card, action.x, action.y
    if card not in state.hands[seat]:
        return Rejection("not_in_hand", f"element card {card} is not in your hand")
    if not (-REACH <= x <= REACH and -REACH <= y <= REACH):
        return Rejection("off_table", f"({x}, {y}) is too far from the other cards")
    cell = cell_of(x, y)
    requirement = state.open_cells.get(cell)
    if requirement is None:
        if cell in state.grid:
            return Rejection("occupied", f"a card already lies on ({x}, {y})")
        return Rejection("no_neighbour", f"({x}, {y}) touches no card on the table")
    if not fits(card, requirement):
        return Rejection("edges_mismatch", _mismatch(state, card, cell))
    events: list[Any] = [CardPlaced(seat, card, x, y)]
    grid = state.grid.copy()
    grid[cell] = card
    if news_possible(state, grid, cell):
        return events
    return _finish_turn(state, seat, events, draws_object=requirement >> 16 >= 2)


def _mismatch(state: BreakingNewsState, card: int, cell: int) -> str:
    for side, step in enumerate(STEPS):
        neighbour = state.grid.get(cell + step)
        if neighbour is None or neighbour in state.face_down:
            continue
        mine, theirs = EDGES[card][side], EDGES[neighbour][OPPOSITE[side]]
        if mine != theirs:
            return (
                f"the {SIDES[side]} edge of card {card} is {COLOURS[mine]}, "
                f"but card {neighbour} there shows {COLOURS[theirs]}"
            )
    return f"card {card} does not fit there"


def _decide_pass(state: BreakingNewsState, seat: int, action: PassTurn) -> list | Rejection:
    hand = state.hands[seat]
    deck = state.element_deck + hand
    events: list[Any] = [HandReturned(seat, len(hand), list(hand))]
    events += [ElementDrawn(seat, card) for card in deck[:START_HAND]]
    stuck = state.passes_in_a_row + 1 >= state.seats + -(-len(state.element_deck) // 3)
    return _end_turn(state, seat, events, stalemate=stuck)


def _checked_news(
    state: BreakingNewsState, seat: int, obj: int, cards: list[int]
) -> tuple | Rejection:
    """The chain (middle second) that completes ``obj``, or why it does not."""
    if obj not in state.open_objects and obj not in state.object_hands[seat]:
        return Rejection("unknown_object", f"object {obj} is neither open nor in your hand")
    if len(cards) != 3 or len(set(cards)) != 3:
        return Rejection("not_a_chain", "name three different cards of the table")
    if state.played not in cards:
        return Rejection(
            "played_card_missing", f"the chain must include card {state.played}, just played"
        )
    chosen = set(cards)
    for chain in chains_through(state, state.grid, state.positions[state.played]):
        if set(chain) == chosen:
            if chain_mask(chain) != OBJECT_MASK[obj]:
                wanted = ", ".join(SYMBOLS[s] for s in OBJECT_SYMBOLS[obj])
                return Rejection(
                    "symbols_mismatch", f"object {obj} needs one card each of: {wanted}"
                )
            return chain
    if state.advanced and state.face_down:
        return Rejection(
            "not_a_chain",
            "those cards are not three connected face-up cards with at most one of them "
            "next to a face-down card",
        )
    return Rejection("not_a_chain", "those cards are not three connected face-up cards")


def _decide_complete(
    state: BreakingNewsState, seat: int, action: CompleteObject
) -> list | Rejection:
    if state.stopwatch:
        return Rejection(
            "call_first", "with the stopwatch, call the news (CallBreakingNews), then TellStory"
        )
    chain = _checked_news(state, seat, action.object, action.cards)
    if isinstance(chain, Rejection):
        return chain
    problem = story_problem(action.story, action.cards, action.language)
    if problem:
        return problem
    points = story_points(state, seat, action.object, action.language)
    return _complete(state, seat, action.object, chain, action.story, action.language, points)


def _complete(
    state: BreakingNewsState,
    seat: int,
    obj: int,
    chain: tuple | list,
    story: str,
    language: str | None,
    points: int,
    duration_ms: int | None = None,
) -> list:
    was_open = obj in state.open_objects
    events: list[Any] = [
        ObjectCompleted(seat, obj, list(chain), story, language, points, was_open, duration_ms)
    ]
    if state.advanced:
        events.append(CardTurnedFaceDown(chain[1]))
    if state.object_deck:
        top = state.object_deck[0]
        events.append(ObjectOpened(top) if was_open else ObjectDrawn(seat, top))
    target = completions_to_end(state.seats)
    starts_final_round = state.last_turn is None and state.completed[seat] + 1 == target
    if starts_final_round:
        events.append(FinalRoundStarted(seat, "objects_completed"))
    return _finish_turn(state, seat, events, False, starts_final_round)


def _touching(state: BreakingNewsState, card: int) -> int:
    cell = state.positions[card]
    return sum(cell + step in state.grid for step in STEPS)


def _decide_decline(state: BreakingNewsState, seat: int, action: EndTurn) -> list | Rejection:
    return _finish_turn(state, seat, [], draws_object=_touching(state, state.played) >= 2)


def _decide_call(state: BreakingNewsState, seat: int, action: CallBreakingNews) -> list | Rejection:
    if not state.stopwatch:
        return Rejection("no_stopwatch", "without the stopwatch, use CompleteObject")
    chain = _checked_news(state, seat, action.object, action.cards)
    if isinstance(chain, Rejection):
        return chain
    return [BreakingNewsCalled(seat, action.object, list(chain), action.server_time_ms)]


def _decide_tell(state: BreakingNewsState, seat: int, action: TellStory) -> list | Rejection:
    if seat != state.seat_to_move:
        return Rejection("not_your_story", f"seat {state.seat_to_move} is telling the story")
    cards = state.call_cards
    problem = story_problem(action.story, cards, action.language)
    if problem:
        return problem
    duration = max(0, action.server_time_ms - state.called_at_ms)
    obj = state.call_object
    points = story_points(state, seat, obj, action.language) + stopwatch_adjustment(duration)
    return _complete(state, seat, obj, cards, action.story, action.language, points, duration)


def _decide_silence(state: BreakingNewsState, seat: int, action: ReportSilence) -> list | Rejection:
    teller = state.seat_to_move
    events: list[Any] = [StoryInterrupted(teller, seat)]
    return _finish_turn(state, teller, events, draws_object=_touching(state, state.played) >= 2)


def _decide_vote(state: BreakingNewsState, seat: int, action: VoteForStory) -> list | Rejection:
    if action.story not in state.candidates:
        return Rejection(
            "not_a_candidate", f"vote for one of the tied players' stories: {state.candidates}"
        )
    events: list[Any] = [VoteCast(seat, action.story)]
    if len(state.votes) + 1 < len(state.voters):
        return events
    votes = {**state.votes, seat: action.story}
    tallies = {teller: 0 for teller in _tied(state)}
    for story in votes.values():
        tallies[state.stories[story].seat] += 1
    most = max(tallies.values())
    leaders = [teller for teller, count in tallies.items() if count == most]
    steps = ["vote"]
    if len(leaders) > 1:
        leaders = _most_objects_in_hand(state, leaders)
        steps.append("objects_in_hand")
    events.append(GameEnded(state.final_reason or "", list(state.scores), leaders, steps))
    return events


def _finish_turn(
    state: BreakingNewsState,
    seat: int,
    events: list,
    draws_object: bool,
    final_round_started: bool = False,
) -> list:
    """The end of a turn with a placement: the object draw, the element draw, the end checks."""
    if draws_object and len(state.object_hands[seat]) < OBJECT_HAND_LIMIT and state.object_deck:
        events.append(ObjectDrawn(seat, state.object_deck[0]))
    if state.element_deck:
        events.append(ElementDrawn(seat, state.element_deck[0]))
    elif state.last_turn is None and not final_round_started:
        events.append(FinalRoundStarted(seat, "deck_empty"))
        final_round_started = True
    return _end_turn(state, seat, events, final_round_started)


def _end_turn(
    state: BreakingNewsState,
    seat: int,
    events: list,
    final_round_started: bool = False,
    stalemate: bool = False,
) -> list:
    """Close the turn; after the last turn (or in a stalemate) score and break ties."""
    events.append(TurnEnded(seat))
    last = not final_round_started and state.last_turn == state.turns
    if not (last or stalemate):
        return events
    final = deep_copy(state)
    for event in events:
        evolve(final, event)
    reason = "stalemate" if stalemate else final.final_reason
    events += _ending(final, reason or "")
    return events


def _tied(state: BreakingNewsState) -> list[int]:
    top = max(state.scores)
    return [seat for seat, score in enumerate(state.scores) if score == top]


def _most_objects_in_hand(state: BreakingNewsState, seats: list[int]) -> list[int]:
    most = max(len(state.object_hands[seat]) for seat in seats)
    return [seat for seat in seats if len(state.object_hands[seat]) == most]


def _ending(final: BreakingNewsState, reason: str) -> list:
    """The game's last events on the final state: the winners, or a vote to break a tie."""
    scores = list(final.scores)
    tied = _tied(final)
    if len(tied) == 1:
        return [GameEnded(reason, scores, tied, [])]
    if final.tiebreak == "vote":
        voters = [seat for seat in range(final.seats) if seat not in tied]
        stories = [index for index, story in enumerate(final.stories) if story.seat in tied]
        if voters and stories:
            return [VotingOpened(reason, tied, voters, stories)]
    return [GameEnded(reason, scores, _most_objects_in_hand(final, tied), ["objects_in_hand"])]


_STATE_ENCODER = msgspec.msgpack.Encoder()
_STATE_DECODER = msgspec.msgpack.Decoder(BreakingNewsState)


def deep_copy(state: BreakingNewsState) -> BreakingNewsState:
    """A deep copy, made once per game, to score the state after the last turn's events."""
    return _STATE_DECODER.decode(_STATE_ENCODER.encode(state))


_DECIDERS: dict[type, tuple[int, Any]] = {
    PlaceCard: (PLAY, _decide_place),
    PassTurn: (PLAY, _decide_pass),
    CompleteObject: (NEWS, _decide_complete),
    EndTurn: (NEWS, _decide_decline),
    CallBreakingNews: (NEWS, _decide_call),
    TellStory: (STORY, _decide_tell),
    ReportSilence: (STORY, _decide_silence),
    VoteForStory: (VOTE, _decide_vote),
}
_PHASE_HINTS = (
    "place a card (PlaceCard) or pass (PassTurn)",
    "complete an object or end the turn (EndTurn)",
    "the story is being told (TellStory or ReportSilence)",
    "the players vote on the tie (VoteForStory)",
    "the game is over",
)


def decide(state: BreakingNewsState, seat: int, action: Any) -> list | Rejection:
    """Check one action against the rules and return the events it causes."""
    phase = state.phase
    if phase == OVER:
        return Rejection("game_over", "the game is over")
    entry = _DECIDERS.get(type(action))
    if entry is None:
        return Rejection("unknown_action", f"{type(action).__name__} is not a Breaking News action")
    if not 0 <= seat < state.seats:
        return Rejection("unknown_seat", f"there is no seat {seat}")
    if phase == VOTE:
        if seat not in state.voters:
            return Rejection("not_a_voter", "only the players outside the tie vote")
        if seat in state.votes:
            return Rejection("already_voted", "you have already voted")
    elif phase != STORY and seat != state.seat_to_move:
        return Rejection("not_your_turn", f"it is seat {state.seat_to_move}'s turn")
    wanted, decider = entry
    if wanted != phase:
        return Rejection("wrong_phase", f"now is not the time: {_PHASE_HINTS[phase]}")
    return decider(state, seat, action)


# --- Legal actions --------------------------------------------------------------------------

_PASS = PassTurn()
_END_TURN = EndTurn()
_SILENCE = ReportSilence()


def legal_actions(state: BreakingNewsState, seat: int) -> list[Any]:
    """Every action ``decide`` accepts from ``seat``; completions carry a canonical story."""
    phase = state.phase
    if phase == PLAY:
        if seat != state.seat_to_move:
            return []
        return _placements(state, seat)
    if phase == NEWS:
        if seat != state.seat_to_move:
            return []
        return [_END_TURN, *_completions(state, seat)]
    if phase == STORY:
        if seat != state.seat_to_move:
            return [_SILENCE]
        cards = state.call_cards
        return [_SILENCE] + [
            TellStory(canonical_story(cards, language or "en"), language)
            for language in _story_languages(state)
        ]
    if phase == VOTE and seat in state.voters and seat not in state.votes:
        return [VoteForStory(story) for story in state.candidates]
    return []


def _placements(state: BreakingNewsState, seat: int) -> list[Any]:
    actions: list[Any] = [_PASS]
    append, xy = actions.append, XY
    codes = [(card, EDGE_CODE[card]) for card in state.hands[seat]]
    for cell, requirement in state.open_cells.items():
        mask, colours = requirement & 0xFF, (requirement >> 8) & 0xFF
        for card, code in codes:
            if code & mask == colours:
                x, y = xy[cell]
                append(PlaceCard(card, x, y))
    return actions


def _story_languages(state: BreakingNewsState) -> tuple[str | None, ...]:
    """Declared languages worth listing: each card language with the bonus, else none."""
    return LANGUAGES if state.foreign_language_bonus else (None,)


def _completions(state: BreakingNewsState, seat: int) -> list[Any]:
    objects = state.open_objects + state.object_hands[seat]
    actions: list[Any] = []
    for chain in chains_through(state, state.grid, state.positions[state.played]):
        mask = chain_mask(chain)
        for obj in objects:
            if OBJECT_MASK[obj] != mask:
                continue
            cards = list(chain)
            if state.stopwatch:
                actions.append(CallBreakingNews(obj, cards))
                continue
            for language in _story_languages(state):
                story = canonical_story(cards, language or "en")
                actions.append(CompleteObject(obj, cards, story, language))
    return actions


def to_move(state: BreakingNewsState) -> list[int]:
    """The seats the game waits on: the voters yet to vote, else the seat to move. During a
    story that is the teller alone since version 2: the others may report silence
    (``legal_actions`` lists it) but the game does not wait on them, so no clock of theirs
    runs and no bot is asked."""
    phase = state.phase
    if phase == OVER:
        return []
    if phase == VOTE:
        return [seat for seat in state.voters if seat not in state.votes]
    if phase == STORY and state.rules_version == RULES.oldest:
        return _story_seats(state)
    return [state.seat_to_move]


def _story_seats(state: BreakingNewsState) -> list[int]:
    """Every seat during a story, the teller first (version 1's ``to_move``)."""
    teller = state.seat_to_move
    return [teller] + [seat for seat in range(state.seats) if seat != teller]


def stored_to_move(state: BreakingNewsState, events: list[Any]) -> list[list[int]]:
    """Every ``to_move`` a release may have stored with this state, folded from ``events``: a
    match recorded before versions may have been stored mid-story by a release playing
    version 1."""
    recorded = getattr(events[0], "rules_version", None) if events else None
    if recorded is None and state.phase == STORY:
        return [to_move(state), _story_seats(state)]
    return [to_move(state)]


def may_act(state: BreakingNewsState) -> list[int]:
    """The seats with a legal action: those to move, and during a story every seat (the
    others may report silence)."""
    if state.phase == STORY:
        return list(range(state.seats))
    return to_move(state)


def result(state: BreakingNewsState) -> Outcome | None:
    """Object points per seat; the winners after any tie-break."""
    if state.phase != OVER:
        return None
    return Outcome(list(state.scores), list(state.winners), state.end_reason or "")
