"""Breaking News as the engine contract's ``Game``: its functions, types and refusals."""

from __future__ import annotations

from services.rules.games.breaking_news.cards import MAX_SEATS, MAX_STORY_CHARS, MIN_SEATS
from services.rules.games.breaking_news.events import (
    BreakingNewsAction,
    BreakingNewsEvent,
    BreakingNewsRedactedEvent,
)
from services.rules.games.breaking_news.evolve import evolve
from services.rules.games.breaking_news.options import OPTIONS, setup, validate_options
from services.rules.games.breaking_news.rules import (
    decide,
    legal_actions,
    may_act,
    result,
    stored_to_move,
    to_move,
)
from services.rules.games.breaking_news.state import BreakingNewsState, BreakingNewsView
from services.rules.games.breaking_news.versions import RULES
from services.rules.games.breaking_news.views import redact, view
from services.rules.games.contract import (
    Game,
)

REFUSALS = {
    "unknown_seat": "The acting seat is not a seat of the match: act as one of its seats.",
    "not_a_voter": "Tied players do not vote on the tie: wait for the other players' votes.",
    "already_voted": "You have voted on the tie already: wait for the other voters.",
    "wrong_phase": (
        "The action does not belong to this step of the game (place or pass, news, story, "
        "vote): send one the step takes, as the detail says."
    ),
    "not_in_hand": "The element card is not in your hand: place one of the cards you hold.",
    "off_table": "The square is far from every card: place the card next to a table card.",
    "occupied": "A card already lies on the square: place the card on a free square.",
    "no_neighbour": "The square touches no card of the table: place the card next to one.",
    "edges_mismatch": (
        "An edge of the card differs in colour from the face-up card it touches there: place "
        "it where every touching edge matches, or pass."
    ),
    "unknown_object": (
        "The object is neither open nor in your hand: complete an open object or one of yours."
    ),
    "not_a_chain": (
        "The cards named are not three different, connected face-up cards of the table (in the "
        "advanced game, at most one next to a face-down card): name such a chain."
    ),
    "played_card_missing": "The chain leaves out the card just placed: name a chain through it.",
    "symbols_mismatch": (
        "The chain's symbols are not the object's: name a chain with one card of each of its "
        "symbols."
    ),
    "call_first": (
        "With the stopwatch, an object is not completed at once: call the news "
        "(CallBreakingNews), then tell the story (TellStory)."
    ),
    "no_stopwatch": (
        "This table plays without the stopwatch, so there is no news to call: complete the "
        "object with CompleteObject."
    ),
    "story_too_long": f"The story is longer than {MAX_STORY_CHARS} characters: tell a shorter one.",
    "bad_language": (
        "The story's language is not a code of 2-3 lowercase letters: give such a code, or none."
    ),
    "word_missing": (
        "The story lacks the word of a chain card (in the story's language, if it names one): "
        "tell a story with all three words."
    ),
    "not_your_story": (
        "Another player is telling the story: wait, or report silence (ReportSilence)."
    ),
    "not_a_candidate": (
        "The vote names no story of the tied players: vote for one of their stories."
    ),
}
"""When the rules of Breaking News refuse a move, beyond ``COMMON_REFUSALS`` (see
``Game.refusals``)."""


GAME = Game(
    name="breaking_news",
    title="Breaking News",
    min_players=MIN_SEATS,
    max_players=MAX_SEATS,
    options=OPTIONS,
    action_type=BreakingNewsAction,
    event_type=BreakingNewsEvent,
    redacted_event_type=BreakingNewsRedactedEvent,
    state_type=BreakingNewsState,
    view_type=BreakingNewsView,
    setup=setup,
    decide=decide,
    evolve=evolve,
    legal_actions=legal_actions,
    to_move=to_move,
    may_act=may_act,
    stored_to_move=stored_to_move,
    rules=RULES,
    view=view,
    redact=redact,
    result=result,
    refusals=REFUSALS,
    validate_options=validate_options,
    description=(
        "Journalists in South Tyrol join word cards by their coloured edges; three linked "
        "cards whose symbols match an object card make the news, told as a story."
    ),
)
