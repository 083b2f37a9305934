"""Dingo's rules of play: ``decide``, the legal actions, who moves, the result."""

from __future__ import annotations

from typing import Any

from services.rules.games.contract import (
    Outcome,
    Rejection,
    decide_in_turn,
)
from services.rules.games.dingo.cards import (
    CARD_CODE,
    CARD_ID,
    CARDS,
    COLOUR_BIT,
    GUARDS,
    HAND_SIZE,
    KEYWORD,
    KIND_BIT,
    REMOVES,
    STARTING_BIT,
    VALUE,
)
from services.rules.games.dingo.chance import day_started
from services.rules.games.dingo.scoring import day_points, ranch_value
from services.rules.games.dingo.state import (
    CardDiscarded,
    CardPlayed,
    CardRemoved,
    DayEnded,
    DestroyProtected,
    DingoState,
    DiscardCard,
    Event,
    GameEnded,
    PlayCard,
    ProtectedCardDestroyed,
    TurnEnded,
)


def colours_on(ranch: list[int]) -> int:
    bits = 0
    for code in ranch:
        bits |= COLOUR_BIT[code]
    return bits


def guarded(ranch: list[int], index: int, appended: int | None) -> bool:
    """Whether the card at ``index`` sits directly left of a moon (``appended``: a card about
    to join the right end of this ranch)."""
    following = ranch[index + 1] if index + 1 < len(ranch) else appended
    return following is not None and GUARDS[following]


def _find_target(
    state: DingoState, code: int, ranch: int, target: str
) -> tuple[int, int] | Rejection:
    """The target's code and owner, or why the effect of ``code`` played onto ``ranch`` may
    not remove it. A card that is not on a ranch is refused alike wherever it is."""
    removes = REMOVES[code]
    if not removes:
        return Rejection("no_effect", f"{CARD_ID[code]} has no effect")
    hit = CARD_CODE.get(target, -1)
    owner = next((seat for seat, cards in enumerate(state.ranches) if hit in cards), -1)
    if owner < 0:
        return Rejection("target_not_in_a_ranch", f"{target!r} is not on any ranch")
    if not KIND_BIT[hit] & removes:
        card = CARDS[code]
        return Rejection(
            "wrong_target_kind",
            f"{card.id} can only {card.keyword} cards of kind {' or '.join(card.removes)}, "
            f"and {target} is a {CARDS[hit].kind}",
        )
    cards = state.ranches[owner]
    index = cards.index(hit)
    if index == 0:
        return Rejection("target_protected", f"{target} is a protected card")
    if guarded(cards, index, code if owner == ranch else None):
        return Rejection("target_moon_guarded", f"{target} is guarded by the moon to its right")
    return hit, owner


def _decide_play(state: DingoState, seat: int, action: PlayCard) -> list[Event] | Rejection:
    code = CARD_CODE.get(action.card)
    hand = state.hands[seat]
    if code is None or code not in hand:
        return Rejection("not_in_hand", f"{action.card!r} is not in your hand")
    ranch = action.ranch
    if type(ranch) is not int or not 0 <= ranch < state.seats:
        return Rejection("unknown_seat", f"there is no seat {ranch!r}")
    bit = COLOUR_BIT[code]
    if ranch != seat and not bit & (STARTING_BIT[ranch] | colours_on(state.ranches[ranch])):
        return Rejection(
            "colour_not_on_ranch",
            f"{action.card} matches neither the starting card nor a card of seat {ranch}'s ranch",
        )
    if action.destroy_protected:
        if ranch != seat:
            return Rejection("not_own_ranch", "only a card played onto your own ranch may do that")
        if not bit & colours_on(state.ranches[seat]):
            return Rejection(
                "colour_not_on_ranch", f"{action.card}'s colour is not on your ranch yet"
            )
    events: list[Event] = [CardPlayed(seat, action.card, ranch)]
    changes = [(ranch, VALUE[code])]
    discards = len(state.discards)
    if action.target is not None:
        found = _find_target(state, code, ranch, action.target)
        if isinstance(found, Rejection):
            return found
        hit, owner = found
        events.append(CardRemoved(seat, action.target, owner, KEYWORD[code]))
        changes.append((owner, -VALUE[hit]))
        discards += 1
        if discards >= state.discard_limit:
            return _end_day(state, events, changes, "discard_limit")
    if action.destroy_protected:
        protected = state.ranches[seat][0]
        events.append(ProtectedCardDestroyed(seat, CARD_ID[protected]))
        changes.append((seat, -VALUE[protected]))
        if discards + 1 >= state.discard_limit:
            return _end_day(state, events, changes, "discard_limit")
    return _end_turn(state, seat, events, changes, len(hand) - 1)


def _decide_destroy(
    state: DingoState, seat: int, action: DestroyProtected
) -> list[Event] | Rejection:
    ranch = state.ranches[seat]
    if len(ranch) < 2:
        return Rejection("lone_ranch_card", "you may only destroy it with more than one card")
    protected = ranch[0]
    events: list[Event] = [ProtectedCardDestroyed(seat, CARD_ID[protected])]
    changes = [(seat, -VALUE[protected])]
    if len(state.discards) + 1 >= state.discard_limit:
        return _end_day(state, events, changes, "discard_limit")
    return _end_turn(state, seat, events, changes, len(state.hands[seat]))


def _decide_discard(state: DingoState, seat: int, action: DiscardCard) -> list[Event] | Rejection:
    code = CARD_CODE.get(action.card)
    hand = state.hands[seat]
    if code is None or code not in hand:
        return Rejection("not_in_hand", f"{action.card!r} is not in your hand")
    events: list[Event] = [CardDiscarded(seat, action.card)]
    if len(state.discards) + 1 >= state.discard_limit:
        return _end_day(state, events, [], "discard_limit")
    return _end_turn(state, seat, events, [], len(hand) - 1)


def _end_turn(
    state: DingoState,
    seat: int,
    events: list[Event],
    changes: list[tuple[int, int]],
    hand_size: int,
) -> list[Event]:
    """Draw back up to two; a player who cannot, because the pile is empty, ends the day."""
    wanted = HAND_SIZE - hand_size
    pile = len(state.draw_pile) - state.drawn
    cards = [CARD_ID[code] for code in state.draw_pile[state.drawn : state.drawn + wanted]]
    events.append(TurnEnded(seat, len(cards), cards))
    if wanted > pile:
        return _end_day(state, events, changes, "draw_pile_empty")
    return events


def _end_day(
    state: DingoState, events: list[Event], changes: list[tuple[int, int]], reason: str
) -> list[Event]:
    """Score the day; then end the game, or deal the next day (an extra one to break a tie)."""
    values = [ranch_value(ranch) for ranch in state.ranches]
    for seat, change in changes:
        values[seat] += change
    points = day_points(values, state.target)
    totals = [total + point for total, point in zip(state.totals, points, strict=True)]
    events.append(DayEnded(state.day, reason, state.target, values, points, totals))
    best = max(totals)
    if best > state.target_score:
        leaders = [seat for seat, total in enumerate(totals) if total == best]
        if len(leaders) == 1:
            events.append(GameEnded("finished", totals, leaders))
            return events
        if state.tiebreak == "share":
            events.append(GameEnded("tie_shared", totals, leaders))
            return events
    events.append(
        day_started(
            state.seats,
            state.first_player,
            state.chance_seed,
            state.day + 1,
            state.given_decks,
            state.given_rolls,
        )
    )
    return events


_DECIDERS: dict[type, Any] = {
    PlayCard: _decide_play,
    DestroyProtected: _decide_destroy,
    DiscardCard: _decide_discard,
}


decide = decide_in_turn(_DECIDERS, "Dingo")
"""Check one action against the rules and return the events it causes."""


# --- Legal actions --------------------------------------------------------------------------

_DESTROY = DestroyProtected()
_DISCARDS = tuple(DiscardCard(card) for card in CARD_ID)


def _open_targets(ranches: list[list[int]]) -> list[int]:
    """Cards an effect may remove: neither protected nor directly left of a moon."""
    targets = []
    for ranch in ranches:
        last = len(ranch) - 1
        for index in range(1, last):
            if not GUARDS[ranch[index + 1]]:
                targets.append(ranch[index])
        if last > 0:
            targets.append(ranch[last])
    return targets


def legal_actions(state: DingoState, seat: int) -> list[Any]:
    """Every action ``decide`` accepts from ``seat``: each play with every effect choice.

    A card that guards (a moon) has no effect, so playing one never changes the targets.
    """
    if state.end_reason is not None or seat != state.seat_to_move:
        return []
    ranches, hand = state.ranches, state.hands[seat]
    own = ranches[seat]
    actions: list[Any] = [_DISCARDS[code] for code in hand]
    if len(own) > 1:
        actions.append(_DESTROY)
    own_colours = colours_on(own)
    opponents = [
        (other, STARTING_BIT[other] | colours_on(ranch))
        for other, ranch in enumerate(ranches)
        if other != seat
    ]
    targets = None
    for code in hand:
        card, bit, removes = CARD_ID[code], COLOUR_BIT[code], REMOVES[code]
        choices: list[str | None] = [None]
        if removes:
            if targets is None:
                targets = _open_targets(ranches)
            choices += [CARD_ID[hit] for hit in targets if KIND_BIT[hit] & removes]
        for target in choices:
            actions.append(PlayCard(card, seat, target, False))
            if bit & own_colours:
                actions.append(PlayCard(card, seat, target, True))
            for other, colours in opponents:
                if bit & colours:
                    actions.append(PlayCard(card, other, target, False))
    return actions


def to_move(state: DingoState) -> list[int]:
    """The seat whose turn it is, or nobody once the game is over."""
    return [] if state.end_reason is not None else [state.seat_to_move]


def result(state: DingoState) -> Outcome | None:
    """The totals and the winner (or the leaders sharing the win), once the game is over."""
    if state.end_reason is None:
        return None
    return Outcome(list(state.totals), list(state.winners or ()), state.end_reason)
