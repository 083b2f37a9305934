"""The Breaking News heuristic bot: legal moves, accepted stories, sensible news and votes."""

from __future__ import annotations

import copy
import itertools
import random

import msgspec
import pytest

from services.bots.arena import play_match
from services.bots.policies import breaking_news as bot
from services.bots.policies import load_policies, random_choice
from services.bots.policies.breaking_news import TEMPLATES, heuristic, normalise_text
from services.rules.games.breaking_news import GAME
from services.rules.games.breaking_news.cards import (
    ELEMENT_COUNT,
    LANGUAGES,
    MAX_STORY_CHARS,
    NEWS,
    OBJECT_POINTS,
    PLAY,
    STORY,
    WORDS,
)
from services.rules.games.breaking_news.events import CallBreakingNews, CompleteObject, PlaceCard
from services.rules.games.breaking_news.news import missing_word
from services.rules.games.breaking_news.rules import deep_copy
from services.rules.games.breaking_news.state import ELEMENT_CARDS, BreakingNewsState
from tests.unit.services.rules.games.breaking_news.test_playout import HOME_LANGUAGES, VARIANTS

GAMES_PER_VARIANT = 30
PURITY_EVERY = 10
"""One move in this many also checks that the bot left its inputs as they were."""
FREE_FIELDS = ("story", "language")
"""What the bot fills in itself on a completing action: the rest must be a legal action's."""


def options_for(variant: dict, seats: int) -> dict:
    options = dict(variant)
    if options.get("foreign_language_bonus"):
        options["home_languages"] = HOME_LANGUAGES[:seats]
    return options


def fixed(action: dict) -> dict:
    return {key: value for key, value in action.items() if key not in FREE_FIELDS}


def checked(policy, seen: list[dict]):
    """``policy``, asserting that it answers a legal action (its story aside) and leaves its
    inputs alone; the arena then has the rules check the story."""

    def play(view, actions, rng):
        before = copy.deepcopy((view, actions)) if len(seen) % PURITY_EVERY == 0 else None
        chosen = policy(view, actions, rng)
        assert before is None or (view, actions) == before, "the bot changed its inputs"
        if chosen not in actions:
            assert chosen["type"] in ("CompleteObject", "TellStory"), chosen
            assert any(fixed(chosen) == fixed(action) for action in actions), chosen
            assert "server_time_ms" not in chosen or chosen["server_time_ms"] == 0
        if chosen["type"] in ("CompleteObject", "TellStory"):
            # The bot tells its own story, not the plain one the legal actions carry.
            assert chosen["story"] not in {action.get("story") for action in actions}
        seen.append(chosen)
        return chosen

    return play


@pytest.mark.parametrize("seats", range(GAME.min_players, GAME.max_players + 1))
def test_heuristic_always_answers_a_legal_action(seats: int) -> None:
    moves: list[dict] = []
    player = checked(heuristic, moves)
    for index, (variant, game) in enumerate(itertools.product(VARIANTS, range(GAMES_PER_VARIANT))):
        if game % 2:
            policies = [player] * seats
        else:
            policies = [random_choice] * seats
            policies[index % seats] = player
        outcome = play_match(GAME, policies, 1000 * seats + index, options_for(variant, seats))
        assert outcome.winners
    told = [move for move in moves if move["type"] in ("CompleteObject", "TellStory")]
    assert len(told) > 20
    if seats > 2:  # ties among the leaders come up: the others vote
        assert any(move["type"] == "VoteForStory" for move in moves)


def test_registered_under_its_name() -> None:
    assert load_policies()["breaking_news-heuristic"] is heuristic


# --- Stories --------------------------------------------------------------------------------


@pytest.mark.parametrize("language", [*LANGUAGES, None])
def test_every_story_holds_the_three_words_as_the_rules_check_them(language) -> None:
    rng = random.Random(4)
    cards = [msgspec.to_builtins(card) for card in ELEMENT_CARDS]
    for triple in itertools.combinations(range(ELEMENT_COUNT), 3):
        chain = [cards[card] for card in triple]
        story = bot.tell_story(chain, language or "en", rng)
        assert missing_word(story, list(triple), language) is None, story
        assert len(story) <= MAX_STORY_CHARS
        assert bot.story_has_words(story, chain, language)


def test_templates_name_no_card_beyond_the_three() -> None:
    folded = [normalise_text(word) for words in WORDS for word in words.values()]
    for templates in TEMPLATES.values():
        for template in templates:
            text = normalise_text(template.format(a="", b="", c=""))
            assert not [word for word in folded if word in text], template


# --- News, in whole games -------------------------------------------------------------------


def completions_worth(state, seat: int) -> dict[int, int]:
    """The legal completions of the news phase: object -> points."""
    return {
        action.object: OBJECT_POINTS[action.object]
        for action in GAME.legal_actions(state, seat)
        if isinstance(action, CompleteObject | CallBreakingNews)
    }


def news_after(state, seat: int, place: PlaceCard) -> dict[int, int]:
    after = GAME.fold(GAME.decide(state, seat, place), deep_copy(state))
    if after.phase != NEWS:
        return {}
    return completions_worth(after, seat)


def bot_game(seed: int, seats: int, options: dict, check) -> BreakingNewsState:
    """A game of heuristic bots in every seat, ``check(state, seat, chosen)`` at every move."""
    state = GAME.fold(GAME.setup(GAME.resolve_options(options, seats), seats, random.Random(seed)))
    rng = random.Random(seed)
    decoder = msgspec.json.Decoder(GAME.action_type)
    while GAME.result(state) is None:
        seat = GAME.to_move(state)[0]
        view = msgspec.to_builtins(GAME.view(state, seat))
        actions = msgspec.to_builtins(GAME.legal_actions(state, seat))
        chosen = heuristic(view, actions, rng)
        check(state, seat, chosen)
        events = GAME.decide(state, seat, decoder.decode(msgspec.json.encode(chosen)))
        assert isinstance(events, list), events
        state = GAME.fold(events, state)
    return state


def test_places_for_news_and_completes_the_best_object() -> None:
    counts = {"placed for news": 0, "completed": 0}

    def check(state, seat, chosen):
        if state.phase == PLAY and chosen["type"] == "PlaceCard":
            best = {}
            for action in GAME.legal_actions(state, seat):
                if isinstance(action, PlaceCard):
                    best[(action.card, action.x, action.y)] = max(
                        news_after(state, seat, action).values(), default=0
                    )
            top = max(best.values(), default=0)
            if top:
                counts["placed for news"] += 1
                assert best[(chosen["card"], chosen["x"], chosen["y"])] == top
        if state.phase == NEWS:
            worth = completions_worth(state, seat)
            if worth:
                counts["completed"] += 1
                assert chosen["type"] == "CompleteObject"
                assert worth[chosen["object"]] == max(worth.values())

    for seed in range(6):
        bot_game(seed, 3, {}, check)
    assert counts["placed for news"] > 10 and counts["completed"] > 10


def test_foreign_language_bonus_is_earned() -> None:
    homes = ["de", "it", "en"]
    options = {"foreign_language_bonus": True, "home_languages": homes}
    state = bot_game(11, 3, options, lambda *_: None)
    assert state.stories
    for story in state.stories:
        assert story.language in LANGUAGES and story.language != homes[story.seat]
        assert story.points == OBJECT_POINTS[story.object] + 1
        assert missing_word(story.story, story.cards, story.language) is None


def test_stopwatch_news_is_told_by_the_teller_and_the_others_let_it_run() -> None:
    """The others may report silence, but the game waits on the teller alone (so the bots
    service asks no other bot seat), and a bot asked anyway hears no silence: it lets the turn
    pass (None)."""
    told = []

    def check(state, seat, chosen):
        if state.phase == STORY:
            told.append(chosen)
            assert chosen["type"] == "TellStory"
            others = (seat + 1) % state.seats
            view = msgspec.to_builtins(GAME.view(state, others))
            actions = msgspec.to_builtins(GAME.legal_actions(state, others))
            assert actions == [{"type": "ReportSilence"}]
            assert GAME.to_move(state) == [seat]
            assert heuristic(view, actions, random.Random(0)) is None

    for seed in range(4):
        state = bot_game(seed, 3, {"stopwatch": True}, check)
        assert all(story.duration_ms is not None for story in state.stories)
    assert told


# --- Votes ----------------------------------------------------------------------------------


def test_votes_for_the_richest_story_of_the_tie() -> None:
    def story(seat: int, text: str, points: int) -> dict:
        return {
            "seat": seat,
            "object": 0,
            "cards": [0, 1, 2],
            "story": text,
            "language": None,
            "points": points,
            "duration_ms": None,
        }

    stories = [
        story(0, "Breaking News: mayor, bear, mountain hut!", 3),
        story(2, "The bear, not the mayor, found the mountain hut after a long night out.", 1),
        story(1, "A story of the voter itself, which it may not vote for in any case, long.", 2),
        story(0, "Mayor bear hut.", 3),
    ]
    view = {
        "seat": 1,
        "seats": 3,
        "phase": "vote",
        "stories": stories,
        "voting": {"voters": [1], "stories": [0, 1, 3], "votes": {}},
    }
    actions = [{"type": "VoteForStory", "story": index} for index in (0, 1, 3)]
    assert heuristic(view, actions, random.Random(0)) == {"type": "VoteForStory", "story": 1}
    own = [*actions, {"type": "VoteForStory", "story": 2}]
    assert heuristic(view, own, random.Random(0))["story"] == 1


# --- Against random bots --------------------------------------------------------------------


def test_wins_clearly_more_than_its_share_against_random_bots() -> None:
    games, seats, wins = 50, 3, 0.0
    for game in range(games):
        policies = [random_choice] * seats
        policies[game % seats] = heuristic
        outcome = play_match(GAME, policies, seed=game)
        if game % seats in outcome.winners:
            wins += 1 / len(outcome.winners)
    assert wins / games > 0.6  # fair share: 1/3
