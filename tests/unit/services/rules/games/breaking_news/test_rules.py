"""Breaking News rules on hand-built tables: setup, placement, completion, advanced mode, secrecy.

Tables are built from stored events (a deal with the chosen cards in the chosen places), the
way a replay rebuilds a match; every layout is checked to have matching edges, so each table
is one that real play could reach.
"""

from __future__ import annotations

import itertools
import random

from services.rules.games.breaking_news import GAME
from services.rules.games.breaking_news.cards import (
    EDGES,
    ELEMENT_COUNT,
    NEWS,
    OBJECT_COUNT,
    OBJECT_MASK,
    OBJECT_POINTS,
    OBJECT_SYMBOLS,
    PLAY,
    SYMBOL_OF,
    WORDS,
    cell_of,
    xy_of,
)
from services.rules.games.breaking_news.events import (
    CardTurnedFaceDown,
    CompleteObject,
    ElementDrawn,
    EndTurn,
    GameStarted,
    HandReturned,
    ObjectCompleted,
    ObjectDrawn,
    ObjectOpened,
    PassTurn,
    PlaceCard,
    StartingCardPlaced,
    StartingCardSetAside,
    TurnEnded,
)
from services.rules.games.breaking_news.news import canonical_story
from services.rules.games.contract import Rejection

SIDE = {"north": 0, "east": 1, "south": 2, "west": 3}
STEP = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}
OPPOSITE = {"north": "south", "east": "west", "south": "north", "west": "east"}
ALL_CARDS = range(ELEMENT_COUNT)


# --- Building tables ------------------------------------------------------------------------


def colour(card: int, side: str) -> int:
    return EDGES[card][SIDE[side]]


def cards_with(symbol: int | None = None, exclude=(), **edges: int) -> list[int]:
    """Element cards with this symbol and these edge colours (side name -> colour index)."""
    return [
        card
        for card in ALL_CARDS
        if card not in exclude
        and (symbol is None or SYMBOL_OF[card] == symbol)
        and all(colour(card, side) == wanted for side, wanted in edges.items())
    ]


def fillers(count: int, exclude) -> list[int]:
    return [card for card in ALL_CARDS if card not in exclude][:count]


def check_layout(layout: dict[tuple[int, int], int]) -> None:
    for (x, y), card in layout.items():
        for side, (dx, dy) in STEP.items():
            other = layout.get((x + dx, y + dy))
            if other is not None:
                assert colour(card, side) == colour(other, OPPOSITE[side]), (card, side, other)


def deal(
    layout: dict[tuple[int, int], int],
    hands: list[list[int]],
    open_objects: list[int],
    object_hands: list[list[int]],
    *,
    element_deck: list[int] | None = None,
    face_down: tuple[int, ...] = (),
    history: tuple = (),
    **options,
):
    """The state after a deal of these cards (and ``history``), and its events."""
    check_layout(layout)
    seats = len(hands)
    resolved = GAME.resolve_options(options, seats)
    assert not isinstance(resolved, Rejection), resolved
    dealt = list(layout.values()) + [card for hand in hands for card in hand]
    if element_deck is None:
        element_deck = [card for card in ALL_CARDS if card not in dealt]
    objects = open_objects + [obj for hand in object_hands for obj in hand]
    events = [
        GameStarted(
            seats=seats,
            mode=resolved["mode"],
            tiebreak=resolved["tiebreak"],
            foreign_language_bonus=resolved["foreign_language_bonus"],
            stopwatch=resolved["stopwatch"],
            home_languages=resolved["home_languages"],
            element_deck=dealt + element_deck,
            object_deck=objects + [obj for obj in range(OBJECT_COUNT) if obj not in objects],
        )
    ]
    events += [StartingCardPlaced(0, card, x, y) for (x, y), card in layout.items()]
    events += [ElementDrawn(seat, card) for seat, hand in enumerate(hands) for card in hand]
    events += [ObjectOpened(obj) for obj in open_objects]
    events += [ObjectDrawn(seat, obj) for seat, hand in enumerate(object_hands) for obj in hand]
    events += [CardTurnedFaceDown(card) for card in face_down]
    events += list(history)
    return GAME.fold(events), events


def act(state, seat: int, action) -> list:
    events = GAME.decide(state, seat, action)
    assert not isinstance(events, Rejection), events
    for event in events:
        GAME.evolve(state, event)
    return events


def refused(state, seat: int, action) -> Rejection:
    rejection = GAME.decide(state, seat, action)
    assert isinstance(rejection, Rejection), rejection
    return rejection


def kinds(events: list) -> list[str]:
    return [type(event).__name__ for event in events]


def row_for(obj: int, exclude=()) -> tuple[int, int, int]:
    """Three cards bearing the object's symbols that lie west to east with matching edges."""
    for first, second, third in itertools.permutations(OBJECT_SYMBOLS[obj]):
        for west in cards_with(first, exclude):
            for middle in cards_with(second, exclude, west=colour(west, "east")):
                for east in cards_with(third, exclude, west=colour(middle, "east")):
                    return west, middle, east
    raise AssertionError(f"no row completes object {obj}")


def word(card: int, language: str = "en") -> str:
    return WORDS[card][language]


OBJECT = 9  # animal, place, vehicle: 3 points
WEST, MIDDLE, EAST = row_for(OBJECT)
ROW = (WEST, MIDDLE, EAST)


def row_table(played: str = "east", own: bool = False, hand: tuple[int, ...] = (), **options):
    """Two cards of the object's row on the table; seat 0 holds the third.

    ``played="east"``: the middle card lies on the table and the east card is played, so
    the middle of the chain is not the played card. ``played="middle"``: the two ends lie
    on the table and the middle card is played between them. ``own``: seat 0 holds the object
    hidden instead of it lying open.
    """
    if played == "east":
        layout = {(-1, 0): WEST, (0, 0): MIDDLE}
        hand_card, cell = EAST, (1, 0)
    else:
        layout = {(-1, 0): WEST, (1, 0): EAST}
        hand_card, cell = MIDDLE, (0, 0)
    cards = [hand_card, *hand]
    cards += fillers(3 - len(cards), ROW + tuple(cards))
    other = fillers(3, ROW + tuple(cards))
    open_objects, own_objects = ([0, 1], [OBJECT]) if own else ([OBJECT, 0], [1])
    state, _ = deal(layout, [cards, other], open_objects, [own_objects, [2]], **options)
    return state, PlaceCard(hand_card, *cell)


def story_for(cards, language: str = "en") -> str:
    return "Breaking: " + " and ".join(word(card, language) for card in cards)


# --- Setup ----------------------------------------------------------------------------------


def test_setup_lays_out_one_card_per_seat_and_deals_hands_and_objects():
    for seats in (2, 3, 4):
        events = GAME.setup(GAME.resolve_options({}, seats), seats, random.Random(seats))
        state = GAME.fold(events)
        assert len(state.grid) == seats
        layout = {xy_of(cell): card for cell, card in state.grid.items()}
        check_layout(layout)
        assert (0, 0) in layout and all(
            any((x + dx, y + dy) in layout for dx, dy in STEP.values()) for x, y in layout
        )
        assert [len(hand) for hand in state.hands] == [3] * seats
        assert [len(hand) for hand in state.object_hands] == [1] * seats
        assert len(state.open_objects) == 2
        assert len(state.element_deck) == 35 - 4 * seats
        assert len(state.object_deck) == 20 - 2 - seats
        assert GAME.to_move(state) == [0] and state.phase == PLAY


def test_explicit_deck_orders_deal_in_order_and_replay_identically():
    elements = list(range(34, -1, -1))
    objects = list(range(20))
    options = GAME.resolve_options({"element_order": elements, "object_order": objects}, 3)
    first = GAME.setup(options, 3, random.Random(1))
    assert first == GAME.setup(options, 3, random.Random(2))  # no chance left to the seed
    state = GAME.fold(first)
    placed = [event.card for event in first if isinstance(event, StartingCardPlaced)]
    aside = [event.card for event in first if isinstance(event, StartingCardSetAside)]
    assert placed[0] == 34 and state.grid[cell_of(0, 0)] == 34
    assert placed + aside == elements[: len(placed) + len(aside)]
    rest = elements[len(placed) + len(aside) :] + aside
    assert state.hands == [rest[0:3], rest[3:6], rest[6:9]]
    assert state.open_objects == [0, 1] and state.object_hands == [[2], [3], [4]]
    assert state.element_deck == rest[9:]


def test_a_starting_card_that_fits_nowhere_goes_under_the_deck():
    first = 0
    misfit = next(
        card
        for card in ALL_CARDS
        if card != first
        and all(colour(card, side) != colour(first, OPPOSITE[side]) for side in SIDE)
    )
    east = cards_with(exclude=(first, misfit), west=colour(first, "east"))[0]
    order = [first, misfit, east] + [c for c in ALL_CARDS if c not in (first, misfit, east)]
    options = GAME.resolve_options({"element_order": order}, 2)
    events = GAME.setup(options, 2, random.Random(0))
    assert events[1:4] == [
        StartingCardPlaced(0, first, 0, 0),
        StartingCardSetAside(misfit),
        StartingCardPlaced(1, east, 1, 0),  # the row's east end is tried first
    ]
    state = GAME.fold(events)
    assert state.element_deck[-1] == misfit


def test_options_are_checked():
    def problem(options, seats=2):
        rejection = GAME.resolve_options(options, seats)
        assert isinstance(rejection, Rejection) and rejection.code == "bad_option", rejection
        return rejection.detail

    assert "every id 0-34" in problem({"element_order": list(range(34))})
    assert "every id 0-19" in problem({"object_order": [0] * 20})
    assert "home_languages" in problem({"foreign_language_bonus": True})
    assert "one language per seat" in problem({"home_languages": ["de"]}, 2)
    assert "lowercase" in problem({"home_languages": ["de", "Italian"]})
    resolved = GAME.resolve_options(
        {"foreign_language_bonus": True, "home_languages": ["de", "it"]}, 2
    )
    assert resolved["home_languages"] == ["de", "it"] and resolved["mode"] == "beginner"
    assert GAME.resolve_options({}, 5).code == "bad_seat_count"
    secret = {spec.name for spec in GAME.options if spec.secret}
    assert secret == {"element_order", "object_order"}


# --- Placement ------------------------------------------------------------------------------


def test_placement_needs_a_neighbour_and_every_touching_edge_matching():
    misfit = cards_with(exclude=ROW, east=(colour(WEST, "west") + 1) % 4)[0]
    state, _ = row_table(hand=(misfit,))
    assert refused(state, 0, PlaceCard(state.hands[1][0], 1, 0)).code == "not_in_hand"
    assert refused(state, 0, PlaceCard(EAST, 0, 0)).code == "occupied"
    assert refused(state, 0, PlaceCard(EAST, 3, 0)).code == "no_neighbour"
    assert refused(state, 0, PlaceCard(EAST, 99, 0)).code == "off_table"
    assert refused(state, 1, PlaceCard(EAST, 1, 0)).code == "not_your_turn"
    mismatch = refused(state, 0, PlaceCard(misfit, -2, 0))  # its east edge meets the west card
    assert mismatch.code == "edges_mismatch"
    assert mismatch.detail.startswith(f"the east edge of card {misfit} is ")
    assert PlaceCard(misfit, -2, 0) not in GAME.legal_actions(state, 0)
    act(state, 0, PlaceCard(EAST, 1, 0))
    assert state.grid[cell_of(1, 0)] == EAST and EAST not in state.hands[0]


def test_a_cell_between_two_cards_must_match_both():
    left = 0
    right = next(
        card for card in ALL_CARDS if card != left and colour(card, "west") == colour(left, "east")
    )
    layout = {(-1, 0): left, (1, 0): right}
    both = cards_with(exclude=(left, right), west=colour(left, "east"), east=colour(right, "west"))
    one = cards_with(exclude=(left, right), west=colour(left, "east"))
    one = [card for card in one if colour(card, "east") != colour(right, "west")]
    hand = [both[0], one[0], fillers(1, (left, right, both[0], one[0]))[0]]
    state, _ = deal(layout, [hand, fillers(3, (left, right, *hand))], [0, 1], [[2], [3]])
    assert refused(state, 0, PlaceCard(one[0], 0, 0)).code == "edges_mismatch"
    act(state, 0, PlaceCard(both[0], 0, 0))
    assert state.grid[cell_of(0, 0)] == both[0]


def test_legal_placements_are_exactly_the_accepted_ones():
    rng = random.Random(5)
    for _ in range(20):
        state = GAME.fold(GAME.setup(GAME.resolve_options({}, 3), 3, rng))
        for _ in range(rng.randrange(12)):  # a few random turns on
            seat = GAME.to_move(state)[0]
            act(state, seat, rng.choice(GAME.legal_actions(state, seat)))
            if state.phase != PLAY:
                break
        if state.phase != PLAY:
            continue
        seat = state.seat_to_move
        listed = {a for a in GAME.legal_actions(state, seat) if isinstance(a, PlaceCard)}
        xs = [xy_of(cell)[0] for cell in state.grid]
        ys = [xy_of(cell)[1] for cell in state.grid]
        for card in state.hands[seat]:
            for x in range(min(xs) - 2, max(xs) + 3):
                for y in range(min(ys) - 2, max(ys) + 3):
                    action = PlaceCard(card, x, y)
                    accepted = not isinstance(GAME.decide(state, seat, action), Rejection)
                    assert accepted == (action in listed), action


# --- Completion -----------------------------------------------------------------------------


def test_completing_an_open_object_with_a_chain_whose_middle_was_not_played():
    state, place = row_table("east")
    assert kinds(act(state, 0, place)) == ["CardPlaced"]
    assert state.phase == NEWS and GAME.to_move(state) == [0]
    canonical = CompleteObject(OBJECT, [EAST, MIDDLE, WEST], canonical_story(ROW[::-1], "en"))
    assert canonical in GAME.legal_actions(state, 0)
    story = (
        f"Gestern: {word(WEST, 'de').upper()}s! A {word(MIDDLE, 'it')} "
        f"near the {word(EAST).capitalize()}-station."
    )
    top_object = state.object_deck[0]
    events = act(state, 0, CompleteObject(OBJECT, [WEST, EAST, MIDDLE], story))
    assert events[0] == ObjectCompleted(
        0, OBJECT, [EAST, MIDDLE, WEST], story, None, OBJECT_POINTS[OBJECT], True
    )
    assert events[1:] == [ObjectOpened(top_object), ElementDrawn(0, events[2].card), TurnEnded(0)]
    assert state.open_objects == [0, top_object]
    assert state.scores == [3, 0] and state.completed == [1, 0]
    assert state.stories[0].story == story and state.stories[0].cards == [EAST, MIDDLE, WEST]
    assert state.phase == PLAY and GAME.to_move(state) == [1]
    assert not state.face_down  # beginner mode keeps the middle card face up


def test_completing_an_own_object_with_the_played_card_in_the_middle_draws_a_new_one():
    state, place = row_table("middle", own=True)
    act(state, 0, place)
    top_object = state.object_deck[0]
    events = act(state, 0, CompleteObject(OBJECT, [WEST, MIDDLE, EAST], story_for(ROW, "it")))
    assert events[0].cards[1] == MIDDLE and set(events[0].cards) == set(ROW)
    assert events[0].was_open is False
    assert events[1] == ObjectDrawn(0, top_object)
    assert (
        GAME.redact(events[1], 1) == ObjectDrawn(0) and GAME.redact(events[1], None).object is None
    )
    assert state.object_hands[0] == [top_object] and state.open_objects == [0, 1]


def test_an_l_shaped_chain_completes_too():
    obj = 0  # person, animal, vehicle
    symbols = OBJECT_SYMBOLS[obj]
    for corner_symbol, north_symbol, east_symbol in itertools.permutations(symbols):
        for corner in cards_with(corner_symbol):
            north = cards_with(north_symbol, south=colour(corner, "north"))
            east = cards_with(east_symbol, west=colour(corner, "east"))
            if north and east:
                break
        else:
            continue
        break
    layout = {(0, 0): corner, (0, 1): north[0]}
    hand = [east[0], *fillers(2, (corner, north[0], east[0]))]
    state, _ = deal(layout, [hand, fillers(3, (corner, north[0], *hand))], [obj, 1], [[2], [3]])
    act(state, 0, PlaceCard(east[0], 1, 0))
    chain = [east[0], corner, north[0]]
    events = act(state, 0, CompleteObject(obj, chain, story_for(chain)))
    assert events[0].cards == chain and state.completed[0] == 1


def test_completion_rejections_name_the_problem_without_revealing_cards():
    state, place = row_table("east")
    act(state, 0, place)
    cards = [WEST, MIDDLE, EAST]
    missing = refused(state, 0, CompleteObject(OBJECT, cards, story_for(cards[:2])))
    assert missing.code == "word_missing"
    assert all(word(EAST, lang) in missing.detail for lang in ("de", "it", "en"))
    assert refused(state, 0, CompleteObject(OBJECT, cards[:2], "x")).code == "not_a_chain"
    not_played = refused(state, 0, CompleteObject(OBJECT, [WEST, MIDDLE, 30], "x"))
    assert not_played.code == "played_card_missing"
    apart = refused(state, 0, CompleteObject(OBJECT, [WEST, EAST, 30], "x"))
    assert apart.code == "not_a_chain"
    wrong = refused(state, 0, CompleteObject(0, cards, story_for(cards)))
    assert wrong.code == "symbols_mismatch" and "needs one card each of" in wrong.detail
    held_by_other = refused(state, 0, CompleteObject(2, cards, story_for(cards)))
    in_deck = refused(state, 0, CompleteObject(state.object_deck[0], cards, story_for(cards)))
    assert held_by_other.code == in_deck.code == "unknown_object"
    assert held_by_other.detail.replace("2", "#") == in_deck.detail.replace(
        str(state.object_deck[0]), "#"
    )
    too_long = refused(state, 0, CompleteObject(OBJECT, cards, story_for(cards) + "!" * 2000))
    assert too_long.code == "story_too_long"
    bad_language = refused(state, 0, CompleteObject(OBJECT, cards, story_for(cards), "English"))
    assert bad_language.code == "bad_language"
    assert refused(state, 0, PlaceCard(state.hands[0][0], 5, 5)).code == "wrong_phase"


def test_the_chain_must_include_the_card_just_played():
    extra = cards_with(exclude=ROW, east=colour(WEST, "west"))[0]
    layout = {(-2, 0): extra, (-1, 0): WEST, (0, 0): MIDDLE}
    hand = [EAST, *fillers(2, (*ROW, extra))]
    state, _ = deal(layout, [hand, fillers(3, (*ROW, extra, *hand))], [OBJECT, 0], [[1], [2]])
    act(state, 0, PlaceCard(EAST, 1, 0))
    chain = [extra, WEST, MIDDLE]
    rejection = refused(state, 0, CompleteObject(OBJECT, chain, story_for(chain)))
    assert rejection.code == "played_card_missing" and str(EAST) in rejection.detail


def test_declining_the_news_ends_the_turn():
    state, place = row_table("east")
    act(state, 0, place)
    events = act(state, 0, EndTurn())
    assert kinds(events) == ["ElementDrawn", "TurnEnded"]  # one touched card: no object
    assert state.completed == [0, 0] and GAME.to_move(state) == [1]


def test_no_pause_for_news_when_no_uncompleted_object_fits_the_chain():
    symbol = SYMBOL_OF[WEST]
    pair = next(
        (a, b)
        for a, b in itertools.permutations(cards_with(symbol), 2)
        if colour(a, "east") == colour(b, "west")
    )
    layout = {(-1, 0): pair[0], (0, 0): pair[1]}  # two cards of one symbol: no object fits
    east = cards_with(exclude=pair, west=colour(pair[1], "east"))[0]
    hand = [east, *fillers(2, (*pair, east))]
    state, _ = deal(layout, [hand, fillers(3, (*pair, *hand))], [OBJECT, 0], [[1], [2]])
    events = act(state, 0, PlaceCard(east, 1, 0))
    assert kinds(events) == ["CardPlaced", "ElementDrawn", "TurnEnded"]


def between_two_cards(object_hand: list[int]):
    """Seat 0 plays a card touching two table cards whose chain makes no object."""
    symbol = SYMBOL_OF[0]
    left = 0
    right = next(
        card
        for card in cards_with(symbol, exclude=(left,))
        if cards_with(
            symbol, exclude=(left, card), west=colour(left, "east"), east=colour(card, "west")
        )
    )
    middle = cards_with(
        symbol, exclude=(left, right), west=colour(left, "east"), east=colour(right, "west")
    )[0]
    hand = [middle, *fillers(2, (left, right, middle))]
    other = fillers(3, (left, right, *hand))
    state, _ = deal({(-1, 0): left, (1, 0): right}, [hand, other], [1, 2], [object_hand, [3]])
    return state, PlaceCard(middle, 0, 0)


def test_touching_two_cards_without_news_draws_an_object_up_to_three():
    state, place = between_two_cards([4])
    top = state.object_deck[0]
    events = act(state, 0, place)
    assert kinds(events) == ["CardPlaced", "ObjectDrawn", "ElementDrawn", "TurnEnded"]
    assert events[1] == ObjectDrawn(0, top) and state.object_hands[0] == [4, top]
    state, place = between_two_cards([4, 5, 6])
    assert kinds(act(state, 0, place)) == ["CardPlaced", "ElementDrawn", "TurnEnded"]
    assert state.object_hands[0] == [4, 5, 6]


def test_passing_puts_the_hand_under_the_deck_and_draws_three():
    state, _ = row_table()
    hand = list(state.hands[0])
    top = state.element_deck[:3]
    events = act(state, 0, PassTurn())
    assert events == [
        HandReturned(0, 3, hand),
        *(ElementDrawn(0, card) for card in top),
        TurnEnded(0),
    ]
    assert state.hands[0] == top and state.element_deck[-3:] == hand
    assert GAME.redact(events[0], 1) == HandReturned(0, 3)
    assert GAME.redact(events[1], None) == ElementDrawn(0)
    assert state.passes_in_a_row == 1 and GAME.to_move(state) == [1]


# --- Advanced mode --------------------------------------------------------------------------


def test_advanced_completion_turns_the_middle_card_face_down():
    state, place = row_table("east", mode="advanced")
    act(state, 0, place)
    cards = [EAST, MIDDLE, WEST]
    events = act(state, 0, CompleteObject(OBJECT, cards, story_for(cards)))
    assert events[1] == CardTurnedFaceDown(MIDDLE)
    assert state.face_down == [MIDDLE]
    table = {entry.card.card: entry for entry in GAME.view(state, 1).table}
    assert table[MIDDLE].face_down and not table[WEST].face_down


def advanced_cards() -> tuple[int, int, int, int]:
    """For the advanced table: the cards above the middle and below the west card (turned face
    down), a card east of the row with which the east card makes another object, that object."""
    used = set(ROW)
    above = cards_with(exclude=used, south=colour(MIDDLE, "north"))[0]
    below = cards_with(exclude=used | {above}, north=colour(WEST, "south"))[0]
    used |= {above, below}
    pair = 1 << SYMBOL_OF[MIDDLE] | 1 << SYMBOL_OF[EAST]
    far_east, other_object = next(
        (card, obj)
        for card in cards_with(exclude=used, west=colour(EAST, "east"))
        for obj, mask in enumerate(OBJECT_MASK)
        if obj != OBJECT and mask == pair | 1 << SYMBOL_OF[card]
    )
    return above, below, far_east, other_object


ABOVE, BELOW, FAR_EAST, OTHER_OBJECT = advanced_cards()


def advanced_row(hand: tuple[int, ...] = ()):
    """The object's row west to east at y=0 with face-down cards above the middle card and
    below the west card, and the far-east card beyond the east card (seat 0's to play)."""
    used = {*ROW, ABOVE, BELOW, FAR_EAST}
    layout = {(-1, 0): WEST, (0, 0): MIDDLE, (0, 1): ABOVE, (-1, -1): BELOW, (2, 0): FAR_EAST}
    cards = [EAST, *hand]
    cards += fillers(3 - len(cards), used | set(cards))
    other = fillers(3, used | set(cards))
    spare = [obj for obj in range(OBJECT_COUNT) if obj not in (OBJECT, OTHER_OBJECT)]
    state, _ = deal(
        layout,
        [cards, other],
        [OBJECT, OTHER_OBJECT],
        [[spare[0]], [spare[1]]],
        face_down=(ABOVE, BELOW),
        mode="advanced",
    )
    return state


def test_advanced_a_chain_may_have_only_one_card_next_to_a_face_down_card():
    state = advanced_row()
    act(state, 0, PlaceCard(EAST, 1, 0))
    assert state.phase == NEWS
    row = [WEST, MIDDLE, EAST]  # west and middle both lie next to a face-down card
    offered = [a for a in GAME.legal_actions(state, 0) if isinstance(a, CompleteObject)]
    assert [set(a.cards) for a in offered] == [{MIDDLE, EAST, FAR_EAST}]
    rejection = refused(state, 0, CompleteObject(OBJECT, row, story_for(row)))
    assert rejection.code == "not_a_chain" and "face-down" in rejection.detail
    chain = [MIDDLE, EAST, FAR_EAST]  # only the middle card lies next to a face-down card
    events = act(state, 0, CompleteObject(OTHER_OBJECT, chain, story_for(chain)))
    assert events[1] == CardTurnedFaceDown(EAST)


def test_advanced_a_face_down_card_constrains_no_edge_and_joins_no_chain():
    used = {*ROW, ABOVE, BELOW, FAR_EAST}
    probe = next(
        card
        for card in ALL_CARDS
        if card not in used and colour(card, "south") != colour(ABOVE, "north")
    )
    state = advanced_row(hand=(probe,))
    # (0, 2) touches only the face-down card above the middle: a card fits whatever its edge.
    assert PlaceCard(probe, 0, 2) in GAME.legal_actions(state, 0)
    events = act(state, 0, PlaceCard(probe, 0, 2))
    assert kinds(events) == ["CardPlaced", "ElementDrawn", "TurnEnded"]  # no chain, no news
