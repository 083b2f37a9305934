"""The authored Dingo deck (seeds/dingo/cards.json): the totals its README documents."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from services.rules.games.dingo.cards import CARD_FILE, CARDS, COLOURS, KEYWORDS, KINDS, load_cards


def test_sixty_cards_twelve_per_colour_with_unique_ids():
    assert len(CARDS) == 60
    assert COLOURS == ("red", "yellow", "green", "blue", "purple")
    assert Counter(card.colour for card in CARDS) == {colour: 12 for colour in COLOURS}
    assert len({card.id for card in CARDS}) == 60
    assert all(card.id == f"{card.colour}-{card.kind}-{card.value}" for card in CARDS)


def test_kind_counts_values_and_total():
    counts = Counter(card.kind for card in CARDS)
    assert counts == {
        "baby": 10,
        "dingo": 10,
        "lion": 10,
        "elephant": 10,
        "monkey": 5,
        "sunlight": 5,
        "darkness": 5,
        "moon": 5,
    }
    assert sum(card.value for card in CARDS) == 210
    for colour in COLOURS:
        assert sum(card.value for card in CARDS if card.colour == colour) == 42
    values = {kind: sorted({card.value for card in CARDS if card.kind == kind}) for kind in KINDS}
    assert values["baby"] == [1, 2] and values["elephant"] == [6, 7] and values["moon"] == [1]


def test_the_food_chain_and_every_keyword():
    effects = {card.kind: (card.keyword, card.removes) for card in CARDS}
    assert effects == {
        "baby": ("scare", ("elephant",)),
        "elephant": ("stomp", ("lion",)),
        "lion": ("eat", ("dingo",)),
        "dingo": ("eat", ("baby",)),
        "monkey": ("chase", ("sunlight",)),
        "sunlight": ("destroy", ("darkness", "moon")),
        "darkness": ("scare", ("monkey",)),
        "moon": (None, ()),
    }
    assert {keyword for keyword, _ in effects.values() if keyword} == set(KEYWORDS)
    removed_by = Counter(kind for _, removes in effects.values() for kind in removes)
    assert removed_by == {kind: 1 for kind in KINDS}  # every kind has exactly one enemy
    assert all(card.kind not in card.removes for card in CARDS)
    assert [card.kind for card in CARDS if card.guards_left] == ["moon"] * 5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda data: data["kinds"]["baby"].update(keyword="tickle"), "not a keyword"),
        (lambda data: data["kinds"]["moon"].update(keyword="eat", removes=["baby"]), "guarding"),
        (lambda data: data["kinds"]["lion"].update(removes=["dragon"]), "unknown kind"),
        (lambda data: data["cards"][1].update(id=data["cards"][0]["id"]), "unique"),
        (lambda data: data["cards"][0].update(colour="pink"), "unknown colour"),
    ],
)
def test_the_loader_refuses_data_that_breaks_the_rules(tmp_path, change, message):
    data = json.loads(CARD_FILE.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_cards(path)
