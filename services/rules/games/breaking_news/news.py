"""Breaking News' chains and stories: when news is possible and what a story must hold."""

from __future__ import annotations

from services.rules.games.breaking_news.cards import (
    ALL_OBJECT_MASKS,
    FOLDED_WORDS,
    LANGUAGE_CODE,
    LANGUAGES,
    LONG_STORY_MS,
    MAX_STORY_CHARS,
    OBJECT_COUNT,
    OBJECT_MASK,
    OBJECT_POINTS,
    SHORT_STORY_MS,
    STEPS,
    SYMBOL_BIT,
    WORDS,
    normalise_text,
)
from services.rules.games.breaking_news.state import BreakingNewsState
from services.rules.games.contract import (
    Rejection,
)


def chains_through(state: BreakingNewsState, grid: dict[int, int], cell: int) -> list[tuple]:
    """Every chain of three face-up cards through the card on ``cell``, middle card second.

    ``grid`` is the table with that card on it. In advanced mode a chain may have only one
    card next to a face-down card.
    """
    face_down = state.face_down
    neighbours = [
        cell + step for step in STEPS if cell + step in grid and grid[cell + step] not in face_down
    ]
    chains = [
        (first, cell, second)
        for index, first in enumerate(neighbours)
        for second in neighbours[index + 1 :]
    ]
    for middle in neighbours:
        for step in STEPS:
            end = middle + step
            if end != cell and end in grid and grid[end] not in face_down:
                chains.append((cell, middle, end))
    if face_down and state.advanced:
        chains = [chain for chain in chains if _few_face_down_neighbours(grid, face_down, chain)]
    return [(grid[a], grid[b], grid[c]) for a, b, c in chains]


def _few_face_down_neighbours(grid: dict[int, int], face_down: list[int], chain: tuple) -> bool:
    """At most one of the chain's cells lies next to a face-down card."""
    touching = 0
    for cell in chain:
        if any(grid.get(cell + step) in face_down for step in STEPS):
            touching += 1
    return touching <= 1


def chain_mask(chain: tuple) -> int:
    bits = SYMBOL_BIT
    return bits[chain[0]] | bits[chain[1]] | bits[chain[2]]


def news_possible(state: BreakingNewsState, grid: dict[int, int], cell: int) -> bool:
    """Whether a chain through the new card fits an object nobody has completed yet (public)."""
    masks: set[int] | frozenset[int] = ALL_OBJECT_MASKS
    if state.stories:
        taken = {story.object for story in state.stories}
        masks = {OBJECT_MASK[o] for o in range(OBJECT_COUNT) if o not in taken}
    return any(chain_mask(chain) in masks for chain in chains_through(state, grid, cell))


# --- Stories --------------------------------------------------------------------------------


def missing_word(story: str, cards: list[int], language: str | None) -> str | None:
    """Why the story lacks one of the cards' words, or ``None`` when it has them all."""
    text = normalise_text(story)
    for card in cards:
        words = FOLDED_WORDS[card]
        if language in words:
            if words[language] not in text:
                word = WORDS[card][language]
                return f"the story, told in {language}, lacks {word!r} (card {card})"
        elif not any(word in text for word in words.values()):
            shown = " / ".join(WORDS[card][lang] for lang in LANGUAGES)
            return f"the story lacks the word of card {card}: {shown}"
    return None


def canonical_story(cards: list[int] | tuple, language: str) -> str:
    """The plain story a driver without imagination tells: the three words in one language."""
    a, b, c = (WORDS[card][language] for card in cards)
    return f"Breaking News: {a}, {b}, {c}!"


def story_problem(story: str, cards: list[int], language: str | None) -> Rejection | None:
    if len(story) > MAX_STORY_CHARS:
        return Rejection("story_too_long", f"a story has at most {MAX_STORY_CHARS} characters")
    if language is not None and not LANGUAGE_CODE.fullmatch(language):
        return Rejection("bad_language", "a language is a code of 2-3 lowercase letters")
    missing = missing_word(story, cards, language)
    if missing:
        return Rejection("word_missing", missing)
    return None


def story_points(state: BreakingNewsState, seat: int, obj: int, language: str | None) -> int:
    points = OBJECT_POINTS[obj]
    if (
        state.foreign_language_bonus
        and language is not None
        and state.home_languages is not None
        and language != state.home_languages[seat]
    ):
        points += 1
    return points


def stopwatch_adjustment(duration_ms: int) -> int:
    """-1 for a story under 15 s, +1 for one over 30 s."""
    if duration_ms < SHORT_STORY_MS:
        return -1
    return 1 if duration_ms > LONG_STORY_MS else 0
