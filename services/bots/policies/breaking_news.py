"""The heuristic bot of Breaking News: place for news, tell a story with the three words, vote.

Everything is judged from the seat's view (the table, its hands, the open objects, the
stories) and the legal actions:

- **Placing.** Each legal placement is tried on a copy of the table, and the chains of three
  face-up cards through the new card are found as the rules find them (in the advanced game,
  at most one chain card next to a face-down card). A chain whose symbols are those of one of
  the bot's objects or an open object is news worth its points (plus the foreign-language
  bonus, minus the stopwatch's malus for a quickly told story). Without news, a card touching
  two cards draws an object card (while fewer than three are held), and a card next to one
  whose symbol belongs to the same own object prepares a chain. The bot passes only when no
  card fits.
- **News.** The completion worth most is taken (an open object before an own one of the same
  worth: others may take an open one); with the stopwatch a news worth nothing after the malus
  is called only by a leader (it hastens the end). The story is a sentence from a template in
  the chosen language holding the three chain words exactly as the cards spell them, checked
  the way the rules check it (case-folded containment, in the declared language if any); it
  is declared in a language other than the seat's own when that earns the bonus.
- **Votes.** The tie's voters are never tied themselves; the bot votes for the story with the
  most words (then the most points), skipping its own if ever offered one.

With the stopwatch, a seat that is not the teller is shown only ``ReportSilence`` while a
story runs, and is among the seats to move: the bot lets the story run (answers None), since a
pure bot cannot hear silence.
"""

from __future__ import annotations

import random
from typing import Any

from services.rules.games.breaking_news.public import normalise_text

View = dict[str, Any]
Action = dict[str, Any]

STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))
"""North, east, south, west."""
SYMBOL_ORDER = ("person", "animal", "vehicle", "thing", "food", "place", "weather")
"""The order the words enter a story: who, with what, where, in which weather."""
STOPWATCH_MALUS = 1
"""A bot answers at once, so its story takes under 15 s: a point off with the stopwatch."""

TEMPLATES: dict[str, tuple[str, ...]] = {
    "en": (
        "Breaking news from South Tyrol: {a}, {b} and {c} have set the whole valley talking "
        "this morning, and the council promises an explanation by tonight.",
        "Extra edition: witnesses report {a} together with {b}, all of it because of {c}; "
        "the police are asking anyone who saw more to come forward.",
        "Just in: nobody in the village can believe it, but {a}, {b} and {c} turned an ordinary "
        "Tuesday into the story of the year.",
    ),
    "de": (
        "Eilmeldung aus Südtirol: {a}, {b} und {c} sorgen heute früh im ganzen Tal für "
        "Gesprächsstoff, eine Erklärung wird bis heute Abend erwartet.",
        "Sonderausgabe: Zeugen berichten von {a} mit {b}, und schuld daran ist {c}; "
        "die Polizei bittet um weitere Hinweise.",
        "Soeben erreicht uns: Im Dorf kann es niemand glauben, aber {a}, {b} und {c} machen "
        "aus einem gewöhnlichen Dienstag die Geschichte des Jahres.",
    ),
    "it": (
        "Ultime notizie dall'Alto Adige: {a}, {b} e {c} fanno parlare tutta la valle "
        "stamattina, e il comune promette una spiegazione entro stasera.",
        "Edizione straordinaria: i testimoni parlano di {a} insieme a {b}, tutto per colpa di "
        "{c}; la polizia chiede a chi ha visto qualcosa di farsi avanti.",
        "Ultim'ora: in paese stentano a crederci, ma {a}, {b} e {c} hanno trasformato un martedì "
        "come gli altri nella notizia dell'anno.",
    ),
}


# --- Stories --------------------------------------------------------------------------------


def story_has_words(story: str, cards: list[dict], language: str | None) -> bool:
    """Whether the rules accept ``story`` for these element cards (as ``missing_word``)."""
    text = normalise_text(story)
    for card in cards:
        words = card["words"]
        if language in words:
            if normalise_text(words[language]) not in text:
                return False
        elif not any(normalise_text(word) in text for word in words.values()):
            return False
    return True


def story_language(view: View, cards: list[dict]) -> str:
    """The language to tell in: a foreign one where that earns the bonus, else the seat's own
    if the cards speak it, else English."""
    spoken = [lang for lang in cards[0]["words"] if all(lang in c["words"] for c in cards)]
    homes = view.get("home_languages")
    home = homes[view["seat"]] if homes and view.get("seat") is not None else None
    if view.get("foreign_language_bonus") and home is not None:
        foreign = [lang for lang in spoken if lang != home]
        if foreign:
            return "en" if "en" in foreign else foreign[0]
    if home in spoken:
        return home
    return "en" if "en" in spoken or not spoken else spoken[0]


def tell_story(cards: list[dict], language: str, rng: random.Random) -> str:
    """A sentence holding the three cards' words in ``language`` (who first, weather last)."""
    ordered = sorted(
        cards,
        key=lambda c: SYMBOL_ORDER.index(c["symbol"]) if c["symbol"] in SYMBOL_ORDER else 99,
    )
    words = [card["words"][language] for card in ordered]
    templates = TEMPLATES.get(language) or TEMPLATES["en"]
    return rng.choice(templates).format(a=words[0], b=words[1], c=words[2])


def _declared(view: View, language: str) -> str | None:
    """The language to declare: only when it earns the bonus (else none, as the rules allow)."""
    homes = view.get("home_languages")
    if view.get("foreign_language_bonus") and homes and language != homes[view["seat"]]:
        return language
    return None


def _filled(view: View, action: Action, cards: list[dict], rng: random.Random) -> Action:
    """A completing action carrying the bot's own story (the legal one if that ever fails)."""
    language = story_language(view, cards)
    declared = _declared(view, language)
    story = tell_story(cards, language, rng)
    if not story_has_words(story, cards, declared):
        return action
    return {**action, "story": story, "language": declared}


# --- The table ------------------------------------------------------------------------------


class Table:
    """The table as the view shows it: cells to cards, face-down cards apart."""

    def __init__(self, view: View) -> None:
        self.cards: dict[tuple[int, int], dict] = {}
        self.face_down: set[tuple[int, int]] = set()
        self.element: dict[int, dict] = {}
        for entry in view["table"]:
            cell = (entry["x"], entry["y"])
            self.cards[cell] = entry["card"]
            self.element[entry["card"]["card"]] = entry["card"]
            if entry["face_down"]:
                self.face_down.add(cell)
        for card in view.get("hand") or ():
            self.element[card["card"]] = card
        self.advanced = view.get("mode") == "advanced"

    def face_up(self, cell: tuple[int, int]) -> bool:
        return cell in self.cards and cell not in self.face_down

    def neighbours(self, cell: tuple[int, int]) -> list[tuple[int, int]]:
        x, y = cell
        return [(x + dx, y + dy) for dx, dy in STEPS]

    def chains_through(self, cell: tuple[int, int]) -> list[tuple[tuple[int, int], ...]]:
        """Every chain of three face-up cells through ``cell`` (its card already placed)."""
        near = [n for n in self.neighbours(cell) if self.face_up(n)]
        chains = [(a, cell, b) for i, a in enumerate(near) for b in near[i + 1 :]]
        for middle in near:
            for end in self.neighbours(middle):
                if end != cell and self.face_up(end):
                    chains.append((cell, middle, end))
        if self.advanced and self.face_down:
            chains = [chain for chain in chains if self._few_face_down(chain)]
        return chains

    def _few_face_down(self, chain: tuple[tuple[int, int], ...]) -> bool:
        touching = sum(any(n in self.face_down for n in self.neighbours(cell)) for cell in chain)
        return touching <= 1

    def symbols(self, chain: tuple[tuple[int, int], ...]) -> frozenset[str]:
        return frozenset(self.cards[cell]["symbol"] for cell in chain)


def _objects(view: View) -> list[tuple[dict, bool]]:
    """The objects the seat may complete: (object, is open)."""
    own = [(obj, False) for obj in view.get("objects") or ()]
    return own + [(obj, True) for obj in view["open_objects"]]


def _news_worth(view: View, obj: dict) -> int:
    """What completing ``obj`` earns the bot, story bonus and stopwatch malus included."""
    points = obj["points"]
    homes = view.get("home_languages")
    if view.get("foreign_language_bonus") and homes:
        points += 1  # the bot always tells in a foreign language when that pays
    if view.get("stopwatch"):
        points -= STOPWATCH_MALUS
    return points


def _placement_score(view: View, table: Table, action: Action) -> float:
    card = table.element.get(action["card"])
    if card is None:
        return -1e9
    cell = (action["x"], action["y"])
    table.cards[cell] = card
    try:
        objects = _objects(view)
        best = None
        for chain in table.chains_through(cell):
            symbols = table.symbols(chain)
            for obj, is_open in objects:
                if frozenset(obj["symbols"]) == symbols:
                    worth = _news_worth(view, obj) + (0.2 if is_open else 0.0)
                    best = worth if best is None else max(best, worth)
        if best is not None and best > 0:
            return 10.0 + 5.0 * best  # news now beats any preparation
        touching = sum(n in table.cards for n in table.neighbours(cell))
        score = 0.0
        if (
            touching >= 2
            and len(view.get("objects") or ()) < 3
            and view.get("object_deck_size", 0) > 0
        ):
            score += 1.5
        own_masks = [(frozenset(o["symbols"]), o["points"]) for o in view.get("objects") or ()]
        for neighbour in table.neighbours(cell):
            if not table.face_up(neighbour):
                continue
            pair = {card["symbol"], table.cards[neighbour]["symbol"]}
            if len(pair) < 2:
                continue
            for mask, points in own_masks:
                if pair <= mask:
                    score += 0.2 + 0.1 * points
            for obj in view["open_objects"]:
                if pair <= frozenset(obj["symbols"]):
                    score -= 0.1  # a half-built open object invites the others
        return score
    finally:
        del table.cards[cell]


# --- Decisions ------------------------------------------------------------------------------


def _best(scored: list[tuple[float, Action]], rng: random.Random) -> Action:
    top = max(score for score, _ in scored)
    return rng.choice([action for score, action in scored if score == top])


def _play(view: View, actions: list[Action], rng: random.Random) -> Action:
    places = [action for action in actions if action["type"] == "PlaceCard"]
    if not places:
        return next(a for a in actions if a["type"] == "PassTurn")
    table = Table(view)
    return _best([(_placement_score(view, table, a), a) for a in places], rng)


def _leading(view: View) -> bool:
    me, scores = view["seat"], view["scores"]
    return all(scores[me] > score for seat, score in enumerate(scores) if seat != me)


def _news(view: View, actions: list[Action], rng: random.Random) -> Action:
    end = next((a for a in actions if a["type"] == "EndTurn"), None)
    table = Table(view)
    objects = {obj["object"]: (obj, is_open) for obj, is_open in _objects(view)}
    scored: list[tuple[float, Action]] = []
    seen: set[tuple[int, tuple[int, ...]]] = set()
    for action in actions:
        if action["type"] not in ("CompleteObject", "CallBreakingNews"):
            continue
        key = (action["object"], tuple(sorted(action["cards"])))
        if key in seen:  # one entry per declared language: the bot picks its own
            continue
        seen.add(key)
        if action["object"] not in objects:
            continue
        obj, is_open = objects[action["object"]]
        worth = _news_worth(view, obj)
        if worth <= 0 and not _leading(view):
            continue
        scored.append((worth + (0.5 if is_open else 0.0), action))
    if not scored:
        return end if end is not None else rng.choice(actions)
    chosen = _best(scored, rng)
    if chosen["type"] == "CallBreakingNews":
        return chosen
    cards = [table.element[card] for card in chosen["cards"] if card in table.element]
    if len(cards) != 3:
        return chosen
    return _filled(view, chosen, cards, rng)


def _story(view: View, actions: list[Action], rng: random.Random) -> Action | None:
    tells = [a for a in actions if a["type"] == "TellStory"]
    called = view.get("called_news")
    if not tells or called is None:
        return None  # not the teller: ReportSilence is all there is, and no one fell silent
    table = Table(view)
    cards = [table.element[card] for card in called["cards"] if card in table.element]
    if len(cards) != 3:
        return tells[0]
    return _filled(view, tells[0], cards, rng)


def _vote(view: View, actions: list[Action], rng: random.Random) -> Action:
    stories = view["stories"]
    me = view.get("seat")
    candidates = [a for a in actions if stories[a["story"]]["seat"] != me] or actions

    def interest(action: Action) -> tuple[int, int]:
        story = stories[action["story"]]
        return len(story["story"].split()), story["points"]

    top = max(interest(a) for a in candidates)
    return rng.choice([a for a in candidates if interest(a) == top])


def heuristic(view: View, actions: list[Action], rng: random.Random) -> Action | None:
    """The bot's choice for the current step of the game (see the module notes)."""
    phase = view.get("phase")
    if phase == "play":
        return _play(view, actions, rng)
    if phase == "news":
        return _news(view, actions, rng)
    if phase == "story":
        return _story(view, actions, rng)
    if phase == "vote":
        return _vote(view, actions, rng)
    return rng.choice(actions)
