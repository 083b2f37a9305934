"""The authored Breaking News decks: counts, balance, unambiguous words, completable objects."""

from __future__ import annotations

import itertools
import json

from services.rules.games.breaking_news.cards import ELEMENT_COUNT, OBJECT_COUNT, normalise_text
from services.rules.games.contract import SEEDS_DIR

DATA = json.loads((SEEDS_DIR / "breaking_news" / "cards.json").read_text(encoding="utf-8"))
SIDES = ("north", "east", "south", "west")
OFFSETS = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}
OPPOSITE = {"north": "south", "east": "west", "south": "north", "west": "east"}


def chain_layouts(symbols: tuple[str, ...]) -> int:
    """How many ways three cards bearing ``symbols`` lie as a chain with matching edges.

    A layout is a choice of cards (one per symbol), of the middle card, and of the two sides
    of the middle card the other two touch.
    """
    elements = DATA["elements"]
    by_symbol = [[card for card in elements if card["symbol"] == symbol] for symbol in symbols]
    layouts = 0
    for trio in itertools.product(*by_symbol):
        for middle_index in range(3):
            middle = trio[middle_index]
            ends = [card for index, card in enumerate(trio) if index != middle_index]
            for first_side, second_side in itertools.permutations(SIDES, 2):
                layouts += all(
                    middle["edges"][side] == end["edges"][OPPOSITE[side]]
                    for side, end in ((first_side, ends[0]), (second_side, ends[1]))
                )
    return layouts


def test_deck_sizes_ids_and_fields():
    elements, objects = DATA["elements"], DATA["objects"]
    assert len(elements) == ELEMENT_COUNT == 35
    assert len(objects) == OBJECT_COUNT == 20
    assert [card["id"] for card in elements] == list(range(35))
    assert [card["id"] for card in objects] == list(range(20))
    assert DATA["languages"] == ["de", "it", "en"]
    for card in elements:
        assert card["symbol"] in DATA["symbols"]
        assert set(card["words"]) == {"de", "it", "en"}
        assert all(word.strip() == word and word for word in card["words"].values())
        assert set(card["edges"]) == set(SIDES)
        assert set(card["edges"].values()) <= set(DATA["colours"])
    for card in objects:
        assert len(set(card["symbols"])) == 3 and set(card["symbols"]) <= set(DATA["symbols"])
        assert card["points"] in (1, 2, 3)


def test_symbols_and_edge_colours_are_balanced():
    elements = DATA["elements"]
    per_symbol = {s: sum(c["symbol"] == s for c in elements) for s in DATA["symbols"]}
    assert set(per_symbol.values()) == {5}
    for side in SIDES:
        per_colour = [
            sum(c["edges"][side] == colour for c in elements) for colour in DATA["colours"]
        ]
        assert sorted(per_colour) == [8, 9, 9, 9], side
    triples = [frozenset(card["symbols"]) for card in DATA["objects"]]
    assert len(set(triples)) == 20
    per_symbol_objects = [sum(symbol in t for t in triples) for symbol in DATA["symbols"]]
    assert min(per_symbol_objects) >= 8 and max(per_symbol_objects) <= 9
    pairs = {pair for t in triples for pair in itertools.combinations(sorted(t), 2)}
    assert len(pairs) == 21  # every two symbols meet on some object


def test_no_word_stands_for_two_cards():
    """A story word never counts for another card: no word contains another card's word."""
    words = [
        (card["id"], normalise_text(word))
        for card in DATA["elements"]
        for word in card["words"].values()
    ]
    for (card, word), (other, other_word) in itertools.permutations(words, 2):
        if card != other:
            assert word not in other_word, (word, other_word)


def test_every_object_can_be_completed_and_points_follow_difficulty():
    layouts = {card["id"]: chain_layouts(tuple(card["symbols"])) for card in DATA["objects"]}
    assert min(layouts.values()) >= 150  # every object has many ways to be completed
    ranked = sorted(DATA["objects"], key=lambda card: layouts[card["id"]])
    assert [card["points"] for card in ranked] == [3] * 4 + [2] * 8 + [1] * 8
