"""The Hanabi bot's reading of the table (see ``hanabi``): what one seat's view says, counted
once per turn (``Table``: copies left, hidden from this seat, seen by every seat, trash), and
how a hand is read under the conventions, by its holder or as this seat estimates a teammate's
reading (``Hand``: each card's candidates, what the colour chain implies, which cards a clue told
to play, and which are playable now, told, queued or not at all).

It is apart from the decisions (``hanabi``: plays, clues, discards) because every decision reads
hands the same way, before and after a simulated clue: the reading is pure and knows nothing of
what the bot should do.
"""

from __future__ import annotations

from typing import Any

from services.rules.games.hanabi.public import COPIES_PER_RANK, RANKS

COPIES = dict(zip(RANKS, COPIES_PER_RANK, strict=True))
"""Copies of each rank in a suit."""


class Table:
    """What one seat's view says, precomputed for the decisions of one turn."""

    def __init__(self, view: dict[str, Any]) -> None:
        self.seat: int = view["seat"]
        self.seats: int = view["seats"]
        self.suits: list[str] = view["suits"]
        self.fw: dict[str, int] = view["fireworks"]
        self.hands: list[list[dict[str, Any]]] = view["hands"]
        self.tokens: int = view["clue_tokens"]
        self.fuses: int = view["fuses_burned"]
        self.deck_size: int = view["deck_size"]
        self.turns_left: int | None = view["turns_left"]
        """Moves left in the final round, this one included (``None`` while the deck lasts)."""
        self.rainbow = len(self.suits) == 6 and "multicolour" not in view["clue_colours"]
        in_hands = sum(len(hand) for hand in self.hands)
        total = self.deck_size + in_hands + len(view["discards"]) + sum(self.fw.values())
        short = len(self.suits) == 6 and total == 55
        self.total: dict[tuple[str, int], int] = {
            (suit, rank): 1 if short and suit == "multicolour" else COPIES[rank]
            for suit in self.suits
            for rank in COPIES
        }
        self.left = dict(self.total)
        """Copies not discarded (played ones included)."""
        for card in view["discards"]:
            self.left[card["suit"], card["rank"]] -= 1
        self.hidden = dict(self.left)
        """Copies neither discarded, played nor in a hand other than this seat's."""
        for suit, height in self.fw.items():
            for rank in range(1, height + 1):
                self.hidden[suit, rank] -= 1
        self.common = dict(self.hidden)
        """As ``hidden`` but counting only what every seat sees: no hand subtracted."""
        for holder, hand in enumerate(self.hands):
            if holder != self.seat:
                for card in hand:
                    self.hidden[card["suit"], card["rank"]] -= 1
        self.trash = {ident: self._is_trash(ident) for ident in self.total}

    def _is_trash(self, ident: tuple[str, int]) -> bool:
        suit, rank = ident
        height = self.fw[suit]
        if rank <= height:
            return True
        return any(self.left[suit, below] == 0 for below in range(height + 1, rank))

    def playable(self, ident: tuple[str, int]) -> bool:
        return self.fw[ident[0]] + 1 == ident[1]

    def critical(self, ident: tuple[str, int]) -> bool:
        return not self.trash[ident] and self.left[ident] == 1

    def touches(self, colour: str, suit: str) -> bool:
        return suit == colour or (self.rainbow and suit == "multicolour")

    def counts_for(self, holder: int) -> dict[tuple[str, int], int]:
        """Unseen copies as ``holder`` counts them, estimated from what this seat also sees."""
        if holder == self.seat:
            return self.hidden
        counts = dict(self.common)
        for other, hand in enumerate(self.hands):
            if other not in (holder, self.seat):
                for card in hand:
                    counts[card["suit"], card["rank"]] -= 1
        return counts


def _candidates(
    knowledge: list[tuple[Any, Any]], counts: dict[tuple[str, int], int]
) -> list[list[tuple[str, int]]]:
    """Each card's possible identities, refined by the cards of the same hand already known."""
    counts = dict(counts)
    result: list[list[tuple[str, int]]] = [[] for _ in knowledge]
    settled: set[int] = set()
    while True:
        changed = False
        for index, (suits, ranks) in enumerate(knowledge):
            if index in settled:
                continue
            result[index] = [
                (suit, rank) for suit in suits for rank in ranks if counts[suit, rank] > 0
            ]
            if len(result[index]) == 1:
                settled.add(index)
                counts[result[index][0]] -= 1
                changed = True
        if not changed:
            return result


def _chains(
    table: Table, knowledge: list[tuple[Any, Any]], marks: list[tuple[bool, bool]]
) -> list[tuple[str, int] | None]:
    """What the chain convention says each colour-only card of a known suit is.

    A hand's colour-only cards of one suit, oldest first, are that firework's next cards in
    order: the oldest is the playable one, the next follows it, and so on (a clue giver
    touches them only so). ``None`` for the cards the convention says nothing about.
    """
    implied: list[tuple[str, int] | None] = [None] * len(knowledge)
    seen: dict[str, int] = {}
    for index, ((suits, _), (colour, rank)) in enumerate(zip(knowledge, marks, strict=True)):
        if colour and not rank and len(suits) == 1:
            suit = suits[0]
            height = table.fw[suit] + 1 + seen.get(suit, 0)
            seen[suit] = seen.get(suit, 0) + 1
            if height <= 5:
                implied[index] = (suit, height)
    return implied


def _told(knowledge: list[tuple[Any, Any]], marks: list[tuple[bool, bool]]) -> list[bool]:
    """Which cards the conventions call playable (if any candidate is): a colour-only card,
    and a rank-only card other than a 5 with an older untouched card beside it (it was not the
    chop when clued, so the clue was no save; a discard can only turn this off, never on).
    A 5 clue is always a save, wherever it lands: it keeps the 5s of one clue together."""
    told, untouched_older = [], False
    for (_, ranks), (colour, rank) in zip(knowledge, marks, strict=True):
        rank_play = untouched_older and tuple(ranks) != (5,)
        told.append(colour != rank and (colour or rank_play))
        untouched_older = untouched_older or not (colour or rank)
    return told


def _plays(
    table: Table,
    told: list[bool],
    candidates: list[list[tuple[str, int]]],
    implied: list[tuple[str, int] | None],
) -> list[str | None]:
    """Per card: ``"sure"`` (every candidate is playable), ``"told"`` (a convention says it
    is playable now), ``"queued"`` (the chain says playable after the suit's older chained
    cards) or ``None``."""
    plays: list[str | None] = []
    for says, cands, ident in zip(told, candidates, implied, strict=True):
        if not cands:
            play = None
        elif all(table.playable(c) for c in cands):
            play = "sure"
        elif ident is not None:
            play = None if ident not in cands else "told" if table.playable(ident) else "queued"
        elif says and any(table.playable(c) for c in cands):
            play = "told"
        else:
            play = None
        plays.append(play)
    return plays


class Hand:
    """One hand as its holder reads it (estimated for a teammate), before or after a clue."""

    def __init__(
        self,
        table: Table,
        hand: list[dict[str, Any]],
        knowledge: list[tuple[Any, Any]],
        marks: list[tuple[bool, bool]],
        counts: dict[tuple[str, int], int],
    ) -> None:
        self.idents = [(card["suit"], card["rank"]) for card in hand]
        self.candidates = _candidates(knowledge, counts)
        self.implied = _chains(table, knowledge, marks)
        self.told = _told(knowledge, marks)
        self.plays = _plays(table, self.told, self.candidates, self.implied)
