"""The Hanabi heuristic bot: a memoryless convention player.

The policy sees only its seat's view, which holds no history (no record of which clue came
when), so every convention is a property of the table as it stands:

- **Knowledge.** A card's candidate identities are the suits and ranks its clues allow, minus
  every copy the holder can see elsewhere (discards, fireworks, other hands, and its own cards
  whose identity it knows). A teammate's knowledge is estimated with only what both seats see,
  so whatever that estimate proves, the teammate proves too.
- **Plays.** A card is played when all its candidates are playable (certain), or when a
  convention says so. *Colour chains*: a hand's cards of one known suit touched by colour and
  not by rank are, oldest first, that firework's next cards (the oldest is played, the next
  follows it). *Rank play clues*: a card touched by rank (not 5) and not by colour, with an
  untouched card older than it in the hand, was not the chop when clued (that older card was
  there, untouched, already), so the clue was no save: it is played if any candidate is
  playable (this reading can fade, when the older card is discarded, but never appear later).
  A 5 clue is always a save. Every clue giver guarantees these readings before cluing.
  Misplays are otherwise avoided; a gamble is taken only once the deck is out, with at most
  one fuse burned.
- **Clues.** Each legal clue is simulated on the teammate's estimated knowledge: it is worth
  the cards it makes playable to them (never a card already claimed elsewhere), saving a
  critical card (a 5 or a last copy) from their chop (and, less urgently, a 2 whose twin no
  hand shows), protecting useful cards and showing trash. A clue that would make a teammate
  misplay is never given, now or once a candidate becomes playable: a card a convention calls
  playable must be that card, and the only copy on its way (only a save of a critical card
  may leave another card to be read as a play later, at a cost: a fix will be needed). One
  that stops a coming misplay (a *fix*) comes first, then a save for the next seat if it has
  nothing to play; the nearest teammate wins ties. With three or more players a bot plays its
  own card before cluing; with two it clues an idle teammate first.
- **Discards.** Known trash first, then the chop (the oldest untouched card); never at 8 tokens.
  A hand of clued cards only gives any safe clue rather than discard, and so does everyone once
  the deck holds no more cards than there are seats (a clue, unlike a discard, draws no card,
  so the final round waits while the known plays go down); if it must, a bot discards the
  card whose loss costs the fewest points (a last 5 costs 1, a last 3 costs 3).

This module decides (plays, clues, discards); how the table and each hand read under these
conventions, the same for every decision, is ``hanabi_table``.
"""

from __future__ import annotations

import random
from typing import Any

from services.bots.policies.hanabi_table import Hand, Table
from services.rules.games.hanabi.public import MAX_CLUE_TOKENS

MAX_TOKENS = MAX_CLUE_TOKENS
FIX = 100.0
PLAY = 10.0
SAVE = 9.0
RISK = 3.0
"""A save's cost per other card it leaves read as a play once a candidate becomes playable
(someone must then spend a clue on a fix)."""
QUEUE_DELAY = 3.0
"""A card the chain convention makes playable only after another is worth this much less."""
TWO_SAVE = 4.0
"""A 2 on the chop whose other copy no other hand shows: worth a clue, not urgently."""
LOW_VALUE = 1.0
"""A clue worth this much (protecting useful cards) beats discarding while a token is left."""
GAMBLES = (0.0, 0.5)
"""Once the deck is out, play a card likelier than this to be playable (by fuses burned)."""


def _knowledge(hand: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    return [(card["possible_suits"], card["possible_ranks"]) for card in hand]


def _touched(card: dict[str, Any]) -> bool:
    return bool(card["clued_colours"] or card["clued_ranks"])


def _marks(hand: list[dict[str, Any]]) -> list[tuple[bool, bool]]:
    """Per card: whether a colour clue touched it, whether a rank clue did."""
    return [(bool(card["clued_colours"]), bool(card["clued_ranks"])) for card in hand]


def _key(clue: dict[str, Any]) -> tuple[Any, ...]:
    return (clue["target"], clue.get("colour"), clue.get("rank"))


def _chop(hand: list[dict[str, Any]], plays: list[str | None]) -> int | None:
    for index, card in enumerate(hand):
        if not _touched(card) and plays[index] is None:
            return index
    return None


class _Bot:
    def __init__(self, view: dict[str, Any], actions: list[dict[str, Any]]) -> None:
        self.view = view
        self.actions = actions
        self.table = table = Table(view)
        me = table.seat
        self.mine = table.hands[me]
        mine = self.mine
        own = Hand(table, mine, _knowledge(mine), _marks(mine), table.hidden)
        self.my_candidates, self.my_implied, self.my_plays = own.candidates, own.implied, own.plays
        self.saves: set[tuple[Any, ...]] = set()
        """The clues (by ``_key``) that save a critical card from their target's chop."""
        self.values: list[tuple[float, dict[str, Any]]] = []
        """Every clue ``best_clue`` found safe, with its value."""
        self.teammates = [(me + step) % table.seats for step in range(1, table.seats)]
        self.read = {
            holder: Hand(
                table,
                table.hands[holder],
                _knowledge(table.hands[holder]),
                _marks(table.hands[holder]),
                table.counts_for(holder),
            )
            for holder in self.teammates
        }
        # Identities some teammate is about to play, and which of them by convention.
        self.claimed: dict[tuple[str, int], list[tuple[int, str]]] = {}
        for holder, hand in self.read.items():
            for ident, play in zip(hand.idents, hand.plays, strict=True):
                if play is not None:
                    self.claimed.setdefault(ident, []).append((holder, play))
        self.my_maybe = {
            ident
            for play, cands in zip(self.my_plays, self.my_candidates, strict=True)
            if play in ("sure", "told")
            for ident in cands
            if table.playable(ident)
        }
        """Identities my cards about to be played might be."""
        self.my_claims: set[tuple[str, int]] = set()
        for play, cands, implied in zip(
            self.my_plays, self.my_candidates, self.my_implied, strict=True
        ):
            if play in ("told", "queued") and implied is not None:
                self.my_claims.add(implied)
            elif play is not None:
                playable = {ident for ident in cands if table.playable(ident)}
                if len(playable) == 1:  # an unsure claim would block every candidate
                    self.my_claims.update(playable)

    # --- Plays --------------------------------------------------------------------------

    def _yields(self, index: int) -> bool:
        """My card is a known copy of one a teammate will play by the colour convention."""
        cands = self.my_candidates[index]
        playable = [ident for ident in cands if self.table.playable(ident)]
        if len(playable) != 1:
            return False
        return any(play == "told" for _, play in self.claimed.get(playable[0], ()))

    def best_play(self) -> dict[str, Any] | None:
        table = self.table
        options = []
        for index, (card, play) in enumerate(zip(self.mine, self.my_plays, strict=True)):
            if play in (None, "queued") or self._yields(index):
                continue
            ranks = [rank for _, rank in self.my_candidates[index]]
            five = max(ranks) == 5 and table.tokens < MAX_TOKENS
            # Prefer sure cards, 5s (a token back), cards whose successor a teammate holds
            # clued (it becomes playable), then low ranks (they unlock more).
            unlocks = self._unlocks(index)
            options.append((play != "sure", not five, -unlocks, min(ranks), card["order"]))
        if not options:
            return None
        return {"type": "PlayCard", "card": min(options)[-1]}

    def _unlocks(self, index: int) -> int:
        """Teammates' clued cards that my card, once played, would make the next of a suit."""
        table = self.table
        nexts = {
            (suit, rank + 1)
            for suit, rank in self.my_candidates[index]
            if table.playable((suit, rank))
        }
        return sum(
            1
            for holder in self.teammates
            for card in table.hands[holder]
            if _touched(card) and (card["suit"], card["rank"]) in nexts
        )

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

    def _after(self, holder: int, clue: dict[str, Any]) -> tuple[Hand, list[bool]]:
        table = self.table
        hand = table.hands[holder]
        knowledge, marks, touched = [], [], []
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
            marks.append((has_colour, has_rank))
            touched.append(hit)
        after = Hand(table, hand, knowledge, marks, table.counts_for(holder))
        return after, touched

    def clue_value(self, clue: dict[str, Any]) -> float | None:
        """What a clue is worth, or ``None`` if it would lead its target to misplay (or, in
        the final round, if its target has no move left, or one already spoken for)."""
        table = self.table
        holder = clue["target"]
        before = self.read[holder]
        if table.turns_left is not None and (
            (holder - table.seat) % table.seats >= table.turns_left
            or any(
                play in ("sure", "told") and not self._misread(holder, before, index, set())
                for index, play in enumerate(before.plays)
            )
        ):
            return None
        after, touched = self._after(holder, clue)
        hand = table.hands[holder]
        value = 0.0
        seen_plays: set[tuple[str, int]] = set()
        risky = 0
        for index, ident in enumerate(after.idents):
            if touched[index] and not self._safe_told(holder, after, index, seen_plays):
                if after.implied[index] is not None or after.plays[index] is not None:
                    return None
                risky += 1  # read as a play only later: tolerable to save a critical card
            play, was = after.plays[index], before.plays[index]
            bad_before = self._misread(holder, before, index, set())
            if play is not None:
                if self._misread(holder, after, index, seen_plays):
                    if play == "sure":
                        continue
                    changed = touched[index] or after.implied[index] != before.implied[index]
                    if changed or play == "told":
                        return None  # it would read the card as playable (or next) wrongly
                    continue
                if was is None and play == "sure" and self._claimed_elsewhere(holder, ident):
                    continue  # a second copy of a card already on its way: worth nothing
                seen_plays.add(ident)
                if bad_before:
                    value += FIX
                elif was is None:
                    value += PLAY + (1.0 if ident[1] == 5 else 0.0) - 0.1 * ident[1]
                    if play == "queued":
                        value -= QUEUE_DELAY
                elif was == "queued" and play != "queued":
                    value += QUEUE_DELAY
            elif bad_before:
                value += FIX
        chop = _chop(hand, before.plays)
        saves = False
        for index, ident in enumerate(after.idents):
            if not touched[index] or _touched(hand[index]):
                continue
            if table.trash[ident]:
                known = all(table.trash[c] for c in after.candidates[index])
                value += 0.3 if known else -1.5
            elif after.plays[index] is None:
                if index == chop and (table.critical(ident) or ident[1] == 5):
                    value += SAVE
                    saves = True
                    self.saves.add(_key(clue))
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
        if risky and not saves:
            return None
        distance = (holder - table.seat) % table.seats
        return value - RISK * risky - 0.05 * distance

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

    def _misread(self, holder: int, hand: Hand, index: int, seen: set[tuple[str, int]]) -> bool:
        """Whether the teammate's reading of this card as playable (or next) is wrong: not
        that card, or a copy someone else (or an earlier card of the clue) already claims."""
        play, ident = hand.plays[index], hand.idents[index]
        if play is None:
            return False
        if ident in seen:
            return True
        if play == "queued":
            wrong = hand.implied[index] != ident
        else:
            wrong = not self.table.playable(ident)
        if wrong or play == "sure":
            return wrong
        return self._claimed_elsewhere(holder, ident)

    def _safe_told(self, holder: int, hand: Hand, index: int, seen: set[tuple[str, int]]) -> bool:
        """A card a clue leaves "told" (the convention calls it playable whenever a candidate
        is) must be playable now and the only copy on its way, even one I might hold, and a
        chained card must be what the chain says: else, once the reading turns playable
        (a candidate becomes playable, the suit's firework grows), it is played wrongly."""
        ident = hand.idents[index]
        if hand.implied[index] is not None:
            return hand.implied[index] == ident
        if not hand.told[index]:
            return True
        return (
            self.table.playable(ident)
            and ident not in seen
            and ident not in self.my_maybe
            and not self._claimed_elsewhere(holder, ident)
        )

    def _claimed_elsewhere(self, holder: int, ident: tuple[str, int]) -> bool:
        """Someone other than ``holder`` (me included) is about to play this identity."""
        others = [claim for claim in self.claimed.get(ident, ()) if claim[0] != holder]
        return bool(others) or ident in self.my_claims

    def best_clue(self) -> tuple[float, dict[str, Any]] | None:
        best: tuple[float, dict[str, Any]] | None = None
        for action in self.actions:
            if action["type"] not in ("GiveColourClue", "GiveRankClue"):
                continue
            value = self.clue_value(action)
            if value is None:
                continue
            self.values.append((value, action))
            if best is None or value > best[0]:
                best = (value, action)
        return best

    def next_save(self) -> dict[str, Any] | None:
        """The best clue saving a critical card on the next seat's chop when that seat has
        nothing to play (it would discard the card): before any other clue, though not before
        my own play (with 4 players, 21.60 against 21.39 over 200 matches)."""
        following = self.teammates[0]
        if any(play not in (None, "queued") for play in self.read[following].plays):
            return None
        saves = [
            (value, clue)
            for value, clue in self.values
            if clue["target"] == following and _key(clue) in self.saves
        ]
        return max(saves, key=lambda pair: pair[0])[1] if saves else None

    def least_harmful_clue(self) -> dict[str, Any] | None:
        """With 8 tokens and no safe clue (no discard allowed, nothing to play), the clue
        that misleads the fewest cards, and none into a misplay now if it can."""

        def harm(clue: dict[str, Any]) -> tuple[int, int]:
            holder = clue["target"]
            after, touched = self._after(holder, clue)
            now = sum(self._misread(holder, after, index, set()) for index in range(len(touched)))
            later = sum(
                hit and not self._safe_told(holder, after, index, set())
                for index, hit in enumerate(touched)
            )
            return (now, later)

        clues = [a for a in self.actions if a["type"] in ("GiveColourClue", "GiveRankClue")]
        return min(clues, key=harm, default=None)

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

        def loss(index: int) -> tuple[float, int]:
            """The points a discard is expected to lose: a last copy of rank r takes its
            suit's r..5 with it (a 5 costs 1, a 3 costs 3); the newest card on ties."""
            weighed = [(table.hidden[ident], ident) for ident in cands[index]]
            total = sum(weight for weight, _ in weighed) or 1
            lost = sum(w * (6 - ident[1]) for w, ident in weighed if table.critical(ident))
            return (lost / total, -index)

        index = min(range(len(mine)), key=loss)
        return {"type": "DiscardCard", "card": mine[index]["order"]}

    # --- The turn -----------------------------------------------------------------------

    def decide(self) -> dict[str, Any]:
        table = self.table
        clue = self.best_clue() if table.tokens > 0 else None
        if clue is not None and clue[0] >= FIX / 2:
            return clue[1]
        if table.seats == 2 and clue is not None and clue[0] >= SAVE - 1 and self._idle(clue[1]):
            return clue[1]
        play = self.best_play()
        if play is not None:
            return play
        save = self.next_save() if clue is not None else None
        if save is not None:
            return save
        if clue is not None and clue[0] >= PLAY / 2:
            return clue[1]
        gamble = self.gamble()
        if gamble is not None:
            return gamble
        if clue is not None and (table.tokens >= MAX_TOKENS or clue[0] >= LOW_VALUE):
            return clue[1]
        if clue is not None and (self._locked() or 0 < table.deck_size <= table.seats):
            return clue[1]
            return clue[1]
        discard = self.best_discard()
        if discard is not None:
            return discard
        if clue is not None:
            return clue[1]
        return self.least_harmful_clue() or self.actions[0]

    def _locked(self) -> bool:
        """Every card of my hand is clued and none is known trash: any discard loses one."""
        table = self.table
        if _chop(self.mine, self.my_plays) is not None:
            return False
        return not any(all(table.trash[ident] for ident in cands) for cands in self.my_candidates)

    def _idle(self, clue: dict[str, Any]) -> bool:
        """Two players: a clue (a play or a save) goes before my own play if its target has
        nothing to play, or it would discard. With more, others can clue it while I play:
        clue-first costs 0.8 to 1.4 points a game at 3 to 5 players, and gains 0.4 at 2."""
        return all(play in (None, "queued") for play in self.read[clue["target"]].plays)


def heuristic(view: dict[str, Any], actions: list[dict[str, Any]], rng: random.Random) -> dict:
    """Hanabi's convention player: see the module docstring."""
    if not actions:
        raise ValueError("no legal action to choose from")
    choice = _Bot(view, actions).decide()
    if choice not in actions:  # a safety net: the conventions only ever name legal actions
        return rng.choice(actions)
    return choice
