"""The Hanabi heuristic bot: a memoryless convention player.

The policy sees only its seat's view, which holds no history (no record of which clue came
when), so every convention is a property of the table as it stands:

- **Knowledge.** A card's candidate identities are the suits and ranks its clues allow, minus
  every copy the holder can see elsewhere (discards, fireworks, other hands, and its own cards
  whose identity it knows). A teammate's knowledge is estimated with only what both seats see,
  so whatever that estimate proves, the teammate proves too.
- **Plays.** A card is played when all its candidates are playable (certain), or when it carries
  a colour clue and no rank clue (the *colour-touch* convention: such a card is always playable,
  which every clue giver guarantees before cluing a colour). Misplays are otherwise avoided;
  a gamble is taken only once the deck is out, with at most one fuse burned.
- **Clues.** Each legal clue is simulated on the teammate's estimated knowledge: it is worth
  the cards it makes playable to them (never a card already claimed elsewhere), saving a
  critical card (a 5 or a last copy) from their chop (and, less urgently, a 2 whose twin no
  hand shows), protecting useful cards and showing trash;
  a clue that would make a teammate misplay is never given, and one that stops a coming misplay
  (a *fix*) comes first. The nearest teammate wins ties.
- **Discards.** Known trash first, then the chop (the oldest untouched card); never at 8 tokens.
"""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.hanabi.public import COPIES_PER_RANK, MAX_CLUE_TOKENS, RANKS

COPIES = dict(zip(RANKS, COPIES_PER_RANK, strict=True))
"""Copies of each rank in a suit."""
MAX_TOKENS = MAX_CLUE_TOKENS
FIX = 100.0
PLAY = 10.0
SAVE = 9.0
TWO_SAVE = 4.0
"""A 2 on the chop whose other copy no other hand shows: worth a clue, not urgently."""
LOW_VALUE = 1.0
"""A clue worth this much (protecting useful cards) beats discarding while a token is left."""
GAMBLES = (0.0, 0.5)
"""Once the deck is out, play a card likelier than this to be playable (by fuses burned)."""


class _Table:
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


def _knowledge(hand: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(card["possible_suits"], card["possible_ranks"]) for card in hand]


def _touched(card: dict[str, Any]) -> bool:
    return bool(card["clued_colours"] or card["clued_ranks"])


def _wants_to_play(
    table: _Table, colour_only: bool, candidates: list[tuple[str, int]]
) -> str | None:
    """``"sure"`` if every candidate is playable, ``"colour"`` by the colour-touch convention."""
    if not candidates:
        return None
    if all(table.playable(ident) for ident in candidates):
        return "sure"
    if colour_only and any(table.playable(ident) for ident in candidates):
        return "colour"
    return None


class _Hand:
    """One teammate's hand as that teammate reads it (estimated), before or after a clue."""

    def __init__(
        self,
        table: _Table,
        holder: int,
        knowledge: list[tuple[Any, Any]],
        colour_only: list[bool],
        counts: dict[tuple[str, int], int],
    ) -> None:
        self.cards = table.hands[holder]
        self.idents = [(card["suit"], card["rank"]) for card in self.cards]
        self.colour_only = colour_only
        self.candidates = _candidates(knowledge, counts)
        self.plays = [
            _wants_to_play(table, colour, cands)
            for colour, cands in zip(colour_only, self.candidates, strict=True)
        ]


def _teammate_hand(table: _Table, holder: int) -> _Hand:
    hand = table.hands[holder]
    colour_only = [bool(card["clued_colours"]) and not card["clued_ranks"] for card in hand]
    return _Hand(table, holder, _knowledge(hand), colour_only, table.counts_for(holder))


def _chop(hand: list[dict[str, Any]], plays: list[str | None]) -> int | None:
    for index, card in enumerate(hand):
        if not _touched(card) and plays[index] is None:
            return index
    return None


class _Bot:
    def __init__(self, view: dict[str, Any], actions: list[dict[str, Any]]) -> None:
        self.view = view
        self.actions = actions
        self.table = table = _Table(view)
        me = table.seat
        self.mine = table.hands[me]
        mine = self.mine
        self.my_candidates = _candidates(_knowledge(mine), table.hidden)
        self.my_plays = [
            _wants_to_play(table, bool(card["clued_colours"]) and not card["clued_ranks"], cands)
            for card, cands in zip(mine, self.my_candidates, strict=True)
        ]
        self.teammates = [(me + step) % table.seats for step in range(1, table.seats)]
        self.read = {holder: _teammate_hand(table, holder) for holder in self.teammates}
        # Identities some teammate is about to play, and which of them by convention.
        self.claimed: dict[tuple[str, int], list[tuple[int, str]]] = {}
        for holder, hand in self.read.items():
            for ident, play in zip(hand.idents, hand.plays, strict=True):
                if play is not None:
                    self.claimed.setdefault(ident, []).append((holder, play))
        self.my_claims: set[tuple[str, int]] = set()
        for play, cands in zip(self.my_plays, self.my_candidates, strict=True):
            if play is not None:
                self.my_claims.update(ident for ident in cands if table.playable(ident))

    # --- Plays --------------------------------------------------------------------------

    def _yields(self, index: int) -> bool:
        """My card is a known copy of one a teammate will play by the colour convention."""
        cands = self.my_candidates[index]
        playable = [ident for ident in cands if self.table.playable(ident)]
        if len(playable) != 1:
            return False
        return any(play == "colour" for _, play in self.claimed.get(playable[0], ()))

    def best_play(self) -> dict[str, Any] | None:
        table = self.table
        options = []
        for index, (card, play) in enumerate(zip(self.mine, self.my_plays, strict=True)):
            if play is None or self._yields(index):
                continue
            ranks = [rank for _, rank in self.my_candidates[index]]
            five = max(ranks) == 5 and table.tokens < MAX_TOKENS
            # Prefer sure cards, 5s (a token back), then low ranks (they unlock more).
            options.append((play != "sure", not five, min(ranks), card["order"]))
        if not options:
            return None
        return {"type": "PlayCard", "card": min(options)[3]}

    def gamble(self) -> dict[str, Any] | None:
        """Once the deck is out, play the likeliest card if a misplay cannot lose the game."""
        table = self.table
        if table.deck_size > 0 or table.fuses >= 2:
            return None
        best, chance = None, 0.0
        for card, cands in zip(self.mine, self.my_candidates, strict=True):
            weights = [table.hidden[ident] for ident in cands]
            if not sum(weights):
                continue
            good = sum(w for ident, w in zip(cands, weights, strict=True) if table.playable(ident))
            if good / sum(weights) > chance:
                best, chance = card, good / sum(weights)
        threshold = GAMBLES[table.fuses]
        if best is None or chance <= threshold:
            return None
        return {"type": "PlayCard", "card": best["order"]}

    # --- Clues --------------------------------------------------------------------------

    def _after(self, holder: int, clue: dict[str, Any]) -> tuple[_Hand, list[bool]]:
        table = self.table
        hand = table.hands[holder]
        knowledge, colour_only, touched = [], [], []
        colour, rank = clue.get("colour"), clue.get("rank")
        for card in hand:
            suits, ranks = card["possible_suits"], card["possible_ranks"]
            has_colour, has_rank = bool(card["clued_colours"]), bool(card["clued_ranks"])
            if colour is not None:
                hit = table.touches(colour, card["suit"])
                suits = [s for s in suits if table.touches(colour, s) == hit]
                has_colour = has_colour or hit
            else:
                hit = card["rank"] == rank
                ranks = [r for r in ranks if (r == rank) == hit]
                has_rank = has_rank or hit
            knowledge.append((suits, ranks))
            colour_only.append(has_colour and not has_rank)
            touched.append(hit)
        after = _Hand(table, holder, knowledge, colour_only, table.counts_for(holder))
        return after, touched

    def clue_value(self, clue: dict[str, Any]) -> float | None:
        """What a clue is worth, or ``None`` if it would lead its target to misplay."""
        table = self.table
        holder = clue["target"]
        before = self.read[holder]
        after, touched = self._after(holder, clue)
        hand = table.hands[holder]
        value = 0.0
        seen_plays: set[tuple[str, int]] = set()
        for index, ident in enumerate(after.idents):
            if touched[index] and after.colour_only[index] and not table.playable(ident):
                return None  # the colour-touch convention: a colour-only card is playable
            play, was = after.plays[index], before.plays[index]
            bad_before = was is not None and not self._good_play(holder, ident, was, set())
            if play is not None:
                good = self._good_play(holder, ident, play, seen_plays)
                if not good:
                    if play == "colour":
                        return None
                    continue
                seen_plays.add(ident)
                if was is None:
                    value += PLAY + (1.0 if ident[1] == 5 else 0.0) - 0.1 * ident[1]
                elif bad_before:
                    value += FIX
            elif bad_before:
                value += FIX
        chop = _chop(hand, before.plays)
        for index, ident in enumerate(after.idents):
            if not touched[index] or _touched(hand[index]):
                continue
            if table.trash[ident]:
                known = all(table.trash[c] for c in after.candidates[index])
                value += 0.3 if known else -1.5
            elif after.plays[index] is None:
                if index == chop and (table.critical(ident) or ident[1] == 5):
                    value += SAVE
                elif table.critical(ident):
                    value += 1.5
                elif (
                    index == chop
                    and ident[1] == 2
                    and not self._duplicate(holder, index, ident, True)
                ):
                    value += TWO_SAVE
                elif ident in seen_plays or self._duplicate(holder, index, ident):
                    value -= 1.0
                else:
                    value += 0.5 if table.playable(ident) or ident[1] <= 2 else 0.2
        distance = (holder - table.seat) % table.seats
        return value - 0.05 * distance

    def _duplicate(
        self, holder: int, index: int, ident: tuple[str, int], visible: bool = False
    ) -> bool:
        """Another touched or claimed copy of ``ident`` is already in some hand."""
        for other, hand in enumerate(self.table.hands):
            if other == self.table.seat:
                continue
            for position, card in enumerate(hand):
                if (other, position) == (holder, index):
                    continue
                if (card["suit"], card["rank"]) == ident and (visible or _touched(card)):
                    return True
        return False

    def _good_play(
        self, holder: int, ident: tuple[str, int], play: str, seen: set[tuple[str, int]]
    ) -> bool:
        """Whether the teammate playing this card now would score, and nobody else claims it."""
        if not self.table.playable(ident) or ident in seen:
            return False
        if play == "colour":
            others = [claim for claim in self.claimed.get(ident, ()) if claim[0] != holder]
            if others or ident in self.my_claims:
                return False
        return True

    def best_clue(self) -> tuple[float, dict[str, Any]] | None:
        best: tuple[float, dict[str, Any]] | None = None
        for action in self.actions:
            if action["type"] not in ("GiveColourClue", "GiveRankClue"):
                continue
            value = self.clue_value(action)
            if value is not None and (best is None or value > best[0]):
                best = (value, action)
        return best

    # --- Discards -----------------------------------------------------------------------

    def best_discard(self) -> dict[str, Any] | None:
        table = self.table
        if table.tokens >= MAX_TOKENS:
            return None
        mine, cands = self.mine, self.my_candidates
        for index, card in enumerate(mine):
            if all(table.trash[ident] for ident in cands[index]) or self._yields(index):
                return {"type": "DiscardCard", "card": card["order"]}
        chop = _chop(mine, self.my_plays)
        if chop is not None:
            return {"type": "DiscardCard", "card": mine[chop]["order"]}

        def risk(index: int) -> tuple[float, int]:
            weights = [table.hidden[ident] for ident in cands[index]] or [1]
            bad = sum(
                w for ident, w in zip(cands[index], weights, strict=False) if table.critical(ident)
            )
            return (bad / sum(weights), -index)

        index = min(range(len(mine)), key=risk)
        return {"type": "DiscardCard", "card": mine[index]["order"]}

    # --- The turn -----------------------------------------------------------------------

    def decide(self) -> dict[str, Any]:
        table = self.table
        clue = self.best_clue() if table.tokens > 0 else None
        if clue is not None and clue[0] >= FIX / 2:
            return clue[1]
        if clue is not None and clue[0] >= SAVE - 1 and self._save_is_urgent(clue[1]):
            return clue[1]
        play = self.best_play()
        if play is not None:
            return play
        if clue is not None and clue[0] >= PLAY / 2:
            return clue[1]
        gamble = self.gamble()
        if gamble is not None:
            return gamble
        if clue is not None and (table.tokens >= MAX_TOKENS or clue[0] >= LOW_VALUE):
            return clue[1]
        discard = self.best_discard()
        if discard is not None:
            return discard
        if clue is not None:
            return clue[1]
        return self.actions[0]

    def _save_is_urgent(self, clue: dict[str, Any]) -> bool:
        """A save matters before my own play if the target has nothing to play itself."""
        return all(play is None for play in self.read[clue["target"]].plays)


def heuristic(view: dict[str, Any], actions: list[dict[str, Any]], rng: random.Random) -> dict:
    """Hanabi's convention player: see the module docstring."""
    if not actions:
        raise ValueError("no legal action to choose from")
    choice = _Bot(view, actions).decide()
    if choice not in actions:  # a safety net: the conventions only ever name legal actions
        return rng.choice(actions)
    return choice
