"""Whatever options ``ResolveOptions`` accepts (the lobby's check at table creation) must set
up a match: a table whose options pass and whose match then fails is stuck."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.games.breaking_news.cards import ELEMENT_COUNT, OBJECT_COUNT
from services.rules.games.carcassonne.messengers import MESSAGE_NUMBERS
from services.rules.games.carcassonne.tiles import COUNTS, LETTERS
from services.rules.games.contract import OptionSpec
from services.rules.games.dingo.cards import CARD_ID
from services.rules.games.hanabi.options import standard_deck
from shared.domain import rules_api as api

GAMES = load_games()
ENGINE = RulesEngine(GAMES)
TRIALS = 1000

POOLS: dict[tuple[str, str], Callable[[random.Random], list[Any]]] = {
    ("hanabi", "deck"): lambda rng: standard_deck(rng.choice([5, 6]), rng.random() < 0.3),
    ("breaking_news", "element_order"): lambda rng: list(range(ELEMENT_COUNT)),
    ("breaking_news", "object_order"): lambda rng: list(range(OBJECT_COUNT)),
    ("breaking_news", "home_languages"): lambda rng: ["de", "it", "lld", "en", "fr"],
    ("carcassonne", "tile_order"): lambda rng: [
        letter for letter, count in zip(LETTERS, COUNTS, strict=True) for _ in range(count)
    ],
    ("carcassonne", "message_order"): lambda rng: list(MESSAGE_NUMBERS),
    ("dingo", "deck_order"): lambda rng: list(CARD_ID) * rng.randint(1, 3),
    ("dingo", "die_rolls"): lambda rng: list(range(0, 12)),
}
"""The elements an explicit order is made of, so that some generated orders are valid."""

WRONG_TYPES: list[Any] = [5.0, "5", True, 1, 0, "true", [1.0], ["1"], [True], {"a": 1}, 2**70]


def _list_candidates(rng: random.Random, pool: list[Any]) -> list[Any]:
    shuffled = rng.sample(pool, len(pool))
    return [
        shuffled,
        shuffled[: rng.randint(0, len(pool))],
        [*shuffled, rng.choice(pool)],
        [rng.choice(pool) for _ in range(rng.randint(0, len(pool)))],
        [],
    ]


def _candidates(game: str, spec: OptionSpec, rng: random.Random) -> list[Any]:
    """Values of the option's declared type, some of them out of range or otherwise wrong."""
    if spec.type == "bool":
        return [True, False]
    if spec.type == "int":
        low = spec.minimum if spec.minimum is not None else -5
        high = spec.maximum if spec.maximum is not None else 100
        return [low, high, low - 1, high + 1, rng.randint(low, high)]
    if spec.type == "enum":
        return list(spec.choices or [])
    return _list_candidates(rng, POOLS[(game, spec.name)](rng))


def _options(game: str, rng: random.Random) -> dict[str, Any]:
    """A random subset of the game's options, each mostly of its type, sometimes not."""
    options = {}
    for spec in GAMES[game].options:
        if rng.random() < 0.5:
            continue
        odd = rng.random() < 0.2
        plausible = [spec.default, *_candidates(game, spec, rng)]
        options[spec.name] = rng.choice([None, *WRONG_TYPES] if odd else plausible)
    return options


def _json_roundtrip(value: Any) -> Any:
    """The options as the lobby stores them and the match service sends them back."""
    return msgspec.json.decode(msgspec.json.encode(value))


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_accepted_option_set_sets_up(game: str) -> None:
    rng = random.Random(f"options:{game}")
    rules = GAMES[game]
    accepted = 0
    for _ in range(TRIALS):
        options = _json_roundtrip(_options(game, rng))
        seats = rng.randint(rules.min_players - 1, rules.max_players + 1)
        resolved = ENGINE.handle(api.ResolveOptions(game=game, options=options, seats=seats))
        if isinstance(resolved, api.Rejected):
            continue
        accepted += 1
        set_up = api.SetUp(
            game=game, options=_json_roundtrip(resolved), seats=seats, seed=rng.getrandbits(63)
        )
        done = ENGINE.handle(set_up)
        assert isinstance(done, api.SetUpDone), (options, seats, done)
    assert accepted >= TRIALS // 20, "the generator should hit valid option sets"


@pytest.mark.parametrize(
    ("game", "option", "value"),
    [
        ("hanabi", "suits", 5.0),
        ("hanabi", "suits", "5"),
        ("hanabi", "rainbow", 1),
        ("hanabi", "empty_clues", "true"),
        ("hanabi", "deck", [1.0] * 50),
        ("dingo", "target_score", 15.0),
        ("dingo", "target_score", True),
        ("dingo", "first_player", "0"),
        ("dingo", "die_rolls", [True]),
        ("carcassonne", "messengers", 0),
        ("carcassonne", "tile_order", [1, 2]),
        ("breaking_news", "mode", ["beginner"]),
    ],
)
def test_an_option_of_the_wrong_type_is_refused_by_name(game: str, option: str, value: Any) -> None:
    seats = GAMES[game].min_players
    refused = ENGINE.handle(api.ResolveOptions(game=game, options={option: value}, seats=seats))
    assert isinstance(refused, api.Rejected) and refused.code == "bad_option"
    assert repr(option) in refused.detail
