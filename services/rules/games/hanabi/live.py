"""The hanab.live JSON game format: export our Hanabi matches, import theirs to replay.

The format (hanab.live's ``misc/example_game_with_comments.jsonc``, version 3)::

    {"players": ["Alice", "Bob"],
     "deck": [{"suitIndex": 0, "rank": 1}, ...],          # draw order, top card first
     "actions": [{"type": 0, "target": 7},                 # play card of order 7
                 {"type": 1, "target": 3},                 # discard card of order 3
                 {"type": 2, "target": 1, "value": 4},     # colour clue to player 1, colour 4
                 {"type": 3, "target": 0, "value": 5}],    # rank clue to player 0, rank 5
     "options": {"variant": "No Variant", "emptyClues": true},
     "seed": "p2v0s1"}

Player 0 moves first and hands are dealt whole, seat by seat, exactly as ``hanabi`` deals, so
card orders (and therefore action targets) mean the same thing on both sides. A colour clue's
value is the index among the variant's clue colours, which equals our suit index.

Variant mapping, ours -> hanab.live (suit slots red, yellow, green, blue, then our white in
hanab.live's Purple slot and our multicolour in the sixth slot):

- ``suits: 5`` -> "No Variant" (Red, Yellow, Green, Blue, Purple)
- ``suits: 6`` -> "6 Suits" (multicolour is Teal: an ordinary, nameable sixth colour)
- ``rainbow`` -> "Rainbow (6 Suits)" (multicolour is Rainbow: 10 cards, touched by every colour)
- ``rainbow_short`` -> "Dark Rainbow (6 Suits)" (Dark Rainbow: Rainbow with one card per rank)
- ``empty_clues`` -> the game option ``emptyClues``

Limits: only those four variants and 2-5 players convert. hanab.live's action type 4 (a game
ended early, by a timeout or a vote) has no counterpart here: import keeps the actions before it
and sets ``terminated``. Options that change the rules (``deckPlays``, ``oneExtraCard``,
``oneLessCard``, ``allOrNothing``, ``detrimentalCharacters``, a non-zero ``startingPlayer``) are
refused; presentation options (timers, ``speedrun``, ``cardCycle``, notes) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from services.rules.games.hanabi.cards import SUITS
from services.rules.games.hanabi.game import GAME
from services.rules.games.hanabi.options import deck_problem, normalise_options
from services.rules.games.hanabi.state import (
    CardDiscarded,
    CardMisplayed,
    CardPlayed,
    ClueGiven,
    DiscardCard,
    GameStarted,
    GiveColourClue,
    GiveRankClue,
    HanabiAction,
    PlayCard,
)

PLAY, DISCARD, COLOUR_CLUE, RANK_CLUE, END_GAME = 0, 1, 2, 3, 4

VARIANTS = {
    (5, False, False): "No Variant",
    (6, False, False): "6 Suits",
    (6, True, False): "Rainbow (6 Suits)",
    (6, True, True): "Dark Rainbow (6 Suits)",
}
"""(suits, rainbow, rainbow_short) -> hanab.live variant name."""

_VARIANT_OPTIONS = {name: key for key, name in VARIANTS.items()}
_RULE_CHANGING_OPTIONS = (
    "deck_plays",
    "one_extra_card",
    "one_less_card",
    "all_or_nothing",
    "detrimental_characters",
)


class LiveFormatError(ValueError):
    """A hanab.live document this engine cannot represent or that is malformed."""


class LiveCard(msgspec.Struct, rename="camel"):
    """A deck entry: the suit's index in the variant and the rank."""

    suit_index: int
    rank: int


class LiveAction(msgspec.Struct):
    """A move: ``type`` 0-4, a card order or player index as ``target``, a clue's ``value``."""

    type: int
    target: int
    value: int | None = None


class LiveOptions(msgspec.Struct, rename="camel"):
    """The game options this module reads; any other option does not change the rules."""

    variant: str = "No Variant"
    empty_clues: bool = False
    starting_player: int = 0
    deck_plays: bool = False
    one_extra_card: bool = False
    one_less_card: bool = False
    all_or_nothing: bool = False
    detrimental_characters: bool = False


class LiveGame(msgspec.Struct):
    """The fields of a hanab.live game this module reads; the others are ignored."""

    players: list[str]
    deck: list[LiveCard]
    actions: list[LiveAction]
    options: LiveOptions = msgspec.field(default_factory=LiveOptions)
    seed: str | None = None


class ImportedGame(msgspec.Struct, frozen=True):
    """A hanab.live game as this engine replays it: ``GAME.setup(options, len(players), ...)``
    then ``decide``/``evolve`` each action in turn (seat ``i % len(players)`` for action ``i``)."""

    players: list[str]
    options: dict[str, Any]
    actions: list[HanabiAction]
    seed: str | None = None
    terminated: bool = False


def variant_name(options: Mapping[str, Any]) -> str:
    """The hanab.live variant that has exactly our variant's suits and clue rules."""
    resolved = normalise_options(dict(options))
    return VARIANTS[resolved["suits"], resolved["rainbow"], resolved["rainbow_short"]]


def _live_action(action: HanabiAction) -> dict[str, int]:
    if isinstance(action, PlayCard):
        return {"type": PLAY, "target": action.card}
    if isinstance(action, DiscardCard):
        return {"type": DISCARD, "target": action.card}
    if isinstance(action, GiveColourClue):
        colour = SUITS.index(action.colour)
        return {"type": COLOUR_CLUE, "target": action.target, "value": colour}
    return {"type": RANK_CLUE, "target": action.target, "value": action.rank}


def export_game(
    options: Mapping[str, Any],
    players: list[str],
    deck: list[int],
    actions: Iterable[HanabiAction],
    seed: str | None = None,
) -> dict[str, Any]:
    """Our options, player names, dealt deck (card codes) and actions as a hanab.live game."""
    live_options: dict[str, Any] = {"variant": variant_name(options)}
    if options.get("empty_clues"):
        live_options["emptyClues"] = True
    document: dict[str, Any] = {
        "players": list(players),
        "deck": [{"suitIndex": code // 10, "rank": code % 10} for code in deck],
        "actions": [_live_action(action) for action in actions],
        "options": live_options,
    }
    if seed is not None:
        document["seed"] = seed
    return document


def actions_from_events(events: Iterable[Any]) -> list[HanabiAction]:
    """The actions behind a stored (unredacted) event log, in the order they were taken."""
    actions: list[HanabiAction] = []
    for event in events:
        if isinstance(event, CardPlayed | CardMisplayed):
            actions.append(PlayCard(event.card))
        elif isinstance(event, CardDiscarded):
            actions.append(DiscardCard(event.card))
        elif isinstance(event, ClueGiven) and event.colour is not None:
            actions.append(GiveColourClue(event.target, event.colour))
        elif isinstance(event, ClueGiven) and event.rank is not None:
            actions.append(GiveRankClue(event.target, event.rank))
    return actions


def export_events(events: list[Any], players: list[str], seed: str | None = None) -> dict[str, Any]:
    """A stored match (its unredacted events, ``GameStarted`` first) as a hanab.live game."""
    start = events[0]
    if not isinstance(start, GameStarted):
        raise LiveFormatError("a Hanabi event log starts with GameStarted")
    if len(players) != start.seats:
        raise LiveFormatError(f"{start.seats} player names needed, not {len(players)}")
    options = {
        "suits": start.suits,
        "rainbow": start.rainbow,
        "rainbow_short": start.rainbow_short,
        "empty_clues": start.empty_clues,
    }
    return export_game(options, players, start.deck, actions_from_events(events), seed)


def _decode(document: Mapping[str, Any] | str | bytes) -> LiveGame:
    try:
        if isinstance(document, str | bytes):
            return msgspec.json.decode(document, type=LiveGame)
        return msgspec.convert(document, LiveGame)
    except msgspec.ValidationError as error:
        raise LiveFormatError(f"not a hanab.live game: {error}") from error
    except msgspec.DecodeError as error:
        raise LiveFormatError(f"not JSON: {error}") from error


def _options_of(game: LiveGame) -> dict[str, Any]:
    live = game.options
    if live.variant not in _VARIANT_OPTIONS:
        known = ", ".join(repr(name) for name in _VARIANT_OPTIONS)
        raise LiveFormatError(f"variant {live.variant!r} is not supported (only {known})")
    changed = [name for name in _RULE_CHANGING_OPTIONS if getattr(live, name)]
    if live.starting_player:
        changed.append("starting_player")
    if changed:
        raise LiveFormatError(f"unsupported hanab.live option(s): {', '.join(changed)}")
    if not GAME.min_players <= len(game.players) <= GAME.max_players:
        raise LiveFormatError(f"{len(game.players)} players: only 2-5 are supported")
    suits, rainbow, rainbow_short = _VARIANT_OPTIONS[live.variant]
    deck = [card.suit_index * 10 + card.rank for card in game.deck]
    if any(not 0 <= card.suit_index < suits or not 1 <= card.rank <= 5 for card in game.deck):
        raise LiveFormatError(f"deck holds a card outside the suits of {live.variant!r}")
    problem = deck_problem(deck, suits, rainbow_short)
    if problem:
        raise LiveFormatError(problem)
    return {
        "suits": suits,
        "rainbow": rainbow,
        "rainbow_short": rainbow_short,
        "empty_clues": live.empty_clues,
        "deck": deck,
    }


def _our_action(action: LiveAction, clue_colours: int) -> HanabiAction:
    if action.type == PLAY:
        return PlayCard(action.target)
    if action.type == DISCARD:
        return DiscardCard(action.target)
    if action.type == COLOUR_CLUE:
        if action.value is None or not 0 <= action.value < clue_colours:
            raise LiveFormatError(f"colour clue value {action.value!r} is not a clue colour")
        return GiveColourClue(action.target, SUITS[action.value])
    if action.type == RANK_CLUE:
        if action.value is None:
            raise LiveFormatError("rank clue without a value")
        return GiveRankClue(action.target, action.value)
    raise LiveFormatError(f"unknown action type {action.type}")


def import_game(document: Mapping[str, Any] | str | bytes) -> ImportedGame:
    """A hanab.live game (parsed JSON or its text) as our options, players and actions.

    Only the format is checked here; the rules are checked when the actions are replayed.
    """
    game = _decode(document)
    options = _options_of(game)
    clue_colours = 5 if options["rainbow"] else options["suits"]
    actions: list[HanabiAction] = []
    terminated = False
    for action in game.actions:
        if action.type == END_GAME:
            terminated = True
            break
        actions.append(_our_action(action, clue_colours))
    return ImportedGame(game.players, options, actions, game.seed, terminated)
