"""The Dingo Ate the Baby, Breaking News and Hanabi in the web client, in the OS's Chromium
against ``playtable stack`` behind its gateway: for the first two, two people (one on a
phone-sized screen) play a whole 2-player match by clicking the table's controls (the UI
offering exactly the actions the server lists), typing each Breaking News story around the
words the table names; the final result the table shows is the server's. A spectator sees the
Dingo table read-only, and the replay shows the finished match without controls. A Breaking
News spectator sees the story clock run; Hanabi fits a 200 px wide screen and shows its
spectator what the clues told. Screenshots of each table at a mid-game position are kept
(tests/e2e/web.py: ``ARTIFACTS``)."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, ViewportSize, expect

from tests.e2e.conftest import Gateway
from tests.e2e.play import auth, open_table
from tests.e2e.web import PHONE, Player, screenshot, seat_two, server_match

# the fixtures skip without nginx, node or chromium
pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]

DINGO_SEED = 11
DINGO_OPTIONS = {"target_score": "2"}
"""A short game: it ends on the day a total passes 2 (a few days of about nine turns)."""
DINGO_MAX_MOVES = 150
DINGO_SCREENSHOT_AT = 14
NEWS_SEED = 3
NEWS_MAX_MOVES = 200
"""A 2-player game ends when the element deck runs out (about 45 moves when cards are placed
whenever they fit), or after the fourth completed object."""
NEWS_SCREENSHOT_AT = 18
NEWS_CALL_SEED = 3
NEWS_MOVES_TO_A_CALL = 120
"""Placing the first card that fits, a 2-player timed game has news to call well before."""
HANABI_SEED = 5
NARROW: ViewportSize = {"width": 200, "height": 800}
SUIT_SYMBOLS = {"red": "♥", "yellow": "★", "green": "♣", "blue": "♦", "white": "○"}
"""Each suit's symbol on the Hanabi cards, as the web client draws them."""


def turns(
    gateway: Gateway, players: list[Player], match_id: str, max_moves: int
) -> Iterator[tuple[int, dict[str, Any], Page, list[Any]]]:
    """Each turn until the match ends (at most ``max_moves``): its number, the match, the
    mover's page once it shows that version, and the actions the server lists for the mover."""
    for move in range(max_moves):
        match = server_match(gateway, match_id)
        if match["status"] == "finished":
            return
        mover = players[match["to_move"][0]].page
        wait_until_shown(mover, match["version"])
        yield move, match, mover, listed_actions(gateway, mover, match_id, match["version"])


def listed_actions(gateway: Gateway, page: Page, match_id: str, version: int) -> list[Any]:
    """The legal actions the server lists for the seat this page holds (its stored token)."""
    token = page.evaluate(f"localStorage.getItem('playtable.match.{match_id}.bearer')")
    answer = gateway.client.get(
        f"/matches/{match_id}/actions",
        params={"version": version},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["actions"]


def canonical(action: Any) -> str:
    return json.dumps(action, sort_keys=True)


def offered(scope: Page | Locator, test_id: str) -> list[Any]:
    """The actions behind the controls with ``test_id`` (their ``data-action``)."""
    controls = scope.get_by_test_id(test_id)
    return [
        json.loads(text)
        for text in controls.evaluate_all("(all) => all.map((c) => c.dataset.action)")
    ]


def wait_until_shown(page: Page, version: int) -> None:
    expect(page.get_by_test_id("version")).to_have_text(str(version))


# --- The Dingo Ate the Baby -----------------------------------------------------------------


def dingo_move(page: Page, listed: list[Any], move: int) -> str:
    """Every third move the first card play offered, else the first discard; the controls are
    exactly the listed actions."""
    expect(page.get_by_test_id("your-turn")).to_be_visible()
    table = page.get_by_test_id("dingo-table")
    shown = offered(table, "action")
    assert sorted(map(canonical, shown)) == sorted(map(canonical, listed))
    plays = table.locator("[data-testid=action][data-action*='\"PlayCard\"']")
    if move % 3 == 0 and plays.count():
        plays.first.click()
        return "play"
    table.locator("[data-testid=action][data-action*='\"DiscardCard\"']").first.click()
    return "discard"


def test_two_people_play_a_whole_dingo_match_by_clicking(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    started = time.monotonic()
    players, match_id = seat_two(people, "dingo", DINGO_SEED, filled=DINGO_OPTIONS)
    watcher = people(PHONE)
    watcher.open(f"#/matches/{match_id}")
    expect(watcher.page.get_by_test_id("dingo-table")).to_be_visible()
    done: dict[str, int] = {}
    shot = False
    for move, match, mover, listed in turns(gateway, players, match_id, DINGO_MAX_MOVES):
        if not shot and move >= DINGO_SCREENSHOT_AT and mover is players[0].page:
            shot = True  # mid-game, ada's controls on show; bob and a spectator watching
            expect(mover.get_by_test_id("your-turn")).to_be_visible()
            screenshot(players[0].page, "dingo-mid-game")
            screenshot(players[1].page, "dingo-phone")
            wait_until_shown(watcher.page, match["version"])
            screenshot(watcher.page, "dingo-spectator")
            for player in (players[1], watcher):
                assert player.page.evaluate("document.documentElement.scrollWidth <= innerWidth")
            # the spectator: every ranch, no hand, no control
            expect(watcher.page.get_by_test_id("ranch")).to_have_count(2)
            expect(watcher.page.get_by_test_id("spectating")).to_be_visible()
            expect(watcher.page.get_by_test_id("action")).to_have_count(0)
        kind = dingo_move(mover, listed, move)
        done[kind] = done.get(kind, 0) + 1
        expect(mover.get_by_test_id("version")).not_to_have_text(str(match["version"]))
        after = server_match(gateway, match_id)
        for player in players:  # the other one sees it live, through the feed
            wait_until_shown(player.page, after["version"])
            scores = player.page.get_by_test_id("dingo-table").get_by_test_id("score")
            expect(scores).to_have_text([str(total) for total in after["view"]["totals"]])
    final = server_match(gateway, match_id)
    assert final["status"] == "finished", f"not over after {DINGO_MAX_MOVES} moves: {done}"
    assert shot
    assert done.get("play", 0) >= 3
    for player in (*players, watcher):
        page = player.page
        expect(page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
        expect(page.get_by_test_id("action")).to_have_count(0)
        check_final(page, final["result"])
    screenshot(players[0].page, "dingo-final")

    replay = players[0]
    replay.open(f"#/matches/{match_id}/replay")
    expect(replay.page.get_by_test_id("replay")).to_be_visible()
    expect(replay.page.get_by_test_id("dingo-table")).to_be_visible()
    expect(replay.page.get_by_test_id("action")).to_have_count(0)
    print(f"dingo: {done} in {time.monotonic() - started:.1f} s")


def check_final(page: Page, result: dict[str, Any]) -> None:
    """The final result the table shows is the server's: each seat's score and the winners."""
    shown = page.get_by_test_id("final-score")
    expect(shown).to_have_count(len(result["scores"]))
    scores = shown.evaluate_all("(all) => all.map((s) => Number(s.dataset.score))")
    winners = shown.evaluate_all(
        "(all) => all.filter((s) => s.dataset.winner === 'true').map((s) => Number(s.dataset.seat))"
    )
    assert scores == result["scores"]
    assert winners == sorted(result["winners"])


# --- Breaking News --------------------------------------------------------------------------


def news_move(page: Page, listed: list[Any], story_shots: list[str], mid_game: str | None) -> str:
    """Place the first card that fits on its first spot (else pass); with news on offer,
    complete the first object with a story around the words the table asks for. The controls
    are exactly the listed actions. ``mid_game``: a screenshot's name, taken with a chosen
    card's spots on show."""
    expect(page.get_by_test_id("your-turn")).to_be_visible()
    table = page.get_by_test_id("breaking-news-table")
    phase = table.get_attribute("data-phase")
    buttons = offered(table, "action")
    others = [action for action in listed if action["type"] not in ("PlaceCard", "CompleteObject")]
    assert sorted(map(canonical, buttons)) == sorted(map(canonical, others))
    if phase == "play":
        placeable = {action["card"] for action in listed if action["type"] == "PlaceCard"}
        hand = table.get_by_test_id("hand-card")
        fits = hand.evaluate_all(
            "(all) => all.filter((c) => c.dataset.placeable === 'true')"
            ".map((c) => Number(c.dataset.card))"
        )
        assert set(fits) == placeable
        if not fits:
            table.get_by_test_id("action").first.click()  # PassTurn, the only listed action
            return "pass"
        table.locator(f"[data-testid=hand-card][data-card='{fits[0]}']").click()
        slots = offered(table, "slot")
        mine = [
            action
            for action in listed
            if action["type"] == "PlaceCard" and action["card"] == fits[0]
        ]
        assert sorted(map(canonical, slots)) == sorted(map(canonical, mine))
        if mid_game:
            screenshot(page, mid_game)
        table.get_by_test_id("slot").first.click()
        return "place"
    if phase == "news":
        news = {
            (action["object"], tuple(action["cards"]))
            for action in listed
            if action["type"] == "CompleteObject"
        }
        expect(table.get_by_test_id("news-choice")).to_have_count(len(news))
        if not news:
            table.get_by_test_id("action").first.click()  # EndTurn
            return "end turn"
        table.get_by_test_id("news-choice").first.click()
        words = table.get_by_test_id("required-word").evaluate_all(
            "(all) => all.map((w) => w.dataset.word)"
        )
        assert len(words) == 3
        submit = table.get_by_test_id("submit-story")
        expect(submit).to_be_disabled()  # no story yet
        first, second, third = words
        story = f"Breaking News! The {first} and the {second} were seen near the {third} at dawn."
        table.get_by_test_id("story-input").fill(story)
        expect(table.get_by_test_id("required-word").filter(has_text="✓")).to_have_count(3)
        if not story_shots:
            story_shots.append(str(screenshot(page, "breaking-news-story")))
        shape = json.loads(submit.get_attribute("data-action") or "null")
        assert canonical(shape) in set(map(canonical, listed))
        submit.click()
        return "story"
    # a vote (never with two players) or any other listed step: the first control
    table.get_by_test_id("action").first.click()
    return phase or "other"


def test_two_people_play_a_whole_breaking_news_match_by_clicking(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    started = time.monotonic()
    players, match_id = seat_two(people, "breaking_news", NEWS_SEED)
    done: dict[str, int] = {}
    shots: list[str] = []
    shot = False
    for move, match, mover, listed in turns(gateway, players, match_id, NEWS_MAX_MOVES):
        shoot = (
            not shot
            and move >= NEWS_SCREENSHOT_AT
            and mover is players[0].page
            and any(action["type"] == "PlaceCard" for action in listed)
        )
        if shoot:  # mid-game: ada with a card's spots on show, bob watching on a phone
            shot = True
            screenshot(players[1].page, "breaking-news-phone")
            assert players[1].page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        kind = news_move(mover, listed, shots, "breaking-news-mid-game" if shoot else None)
        done[kind] = done.get(kind, 0) + 1
        expect(mover.get_by_test_id("version")).not_to_have_text(str(match["version"]))
        after = server_match(gateway, match_id)
        for player in players:
            wait_until_shown(player.page, after["version"])
            table = player.page.get_by_test_id("breaking-news-table")
            scores = table.get_by_test_id("score")
            expect(scores).to_have_text([str(s) for s in after["view"]["scores"]])
            cards = table.get_by_test_id("bn-grid").locator("[data-card]")
            expect(cards).to_have_count(len(after["view"]["table"]))
            expect(table.get_by_test_id("story")).to_have_count(len(after["view"]["stories"]))
    final = server_match(gateway, match_id)
    assert final["status"] == "finished", f"not over after {NEWS_MAX_MOVES} moves: {done}"
    assert shot and shots
    assert done.get("story", 0) >= 1 and done.get("place", 0) >= 10, done
    stories = [story["story"] for story in final["view"]["stories"]]
    assert all(story.startswith("Breaking News! The ") for story in stories)
    for player in players:
        page = player.page
        expect(page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
        expect(page.get_by_test_id("action")).to_have_count(0)
        expect(page.get_by_test_id("slot")).to_have_count(0)
        check_final(page, final["result"])
        expect(page.get_by_test_id("story")).to_have_count(len(stories))
    screenshot(players[0].page, "breaking-news-final")

    replay = players[1]
    replay.open(f"#/matches/{match_id}/replay")
    expect(replay.page.get_by_test_id("replay")).to_be_visible()
    table = replay.page.get_by_test_id("breaking-news-table")
    expect(table.get_by_test_id("story")).to_have_count(len(stories))
    expect(replay.page.get_by_test_id("action")).to_have_count(0)
    expect(replay.page.get_by_test_id("slot")).to_have_count(0)
    print(f"breaking news: {done} in {time.monotonic() - started:.1f} s")


def test_a_breaking_news_spectator_sees_the_story_clock(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """Two seats play a timed game over the API up to a call; a spectator watching from the
    start sees the story's clock count the seconds, as the seats do."""
    options = {"stopwatch": True}
    match_id, tokens = open_table(gateway.stack, "breaking_news", 2, options, NEWS_CALL_SEED)
    watcher = people(PHONE)
    watcher.open(f"#/matches/{match_id}")
    expect(watcher.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    version = play_until_a_call(gateway, match_id, tokens)
    wait_until_shown(watcher.page, version)
    table = watcher.page.get_by_test_id("breaking-news-table")
    expect(table).to_have_attribute("data-phase", "story")
    expect(table.get_by_test_id("story-clock")).to_have_text(re.compile(r"^\d+ s"))
    screenshot(watcher.page, "breaking-news-spectator-clock")


def play_until_a_call(gateway: Gateway, match_id: str, tokens: list[str]) -> int:
    """Each seat to move calls Breaking News when it may, else places the first card that fits,
    else ends its turn or passes; the version once news was called."""
    for _ in range(NEWS_MOVES_TO_A_CALL):
        match = server_match(gateway, match_id)
        assert match["status"] == "running"
        seat = match["to_move"][0]
        headers = auth(tokens[seat])
        listed = gateway.stack.match.get(f"/matches/{match_id}/actions", headers=headers)
        assert listed.status_code == 200, listed.text
        actions = listed.json()["actions"]
        kinds = ("CallBreakingNews", "PlaceCard", "EndTurn", "PassTurn")
        action = next(a for kind in kinds for a in actions if a["type"] == kind)
        moved = gateway.stack.match.post(
            f"/matches/{match_id}/actions",
            json={"game": "breaking_news", "expected_version": match["version"], "action": action},
            headers={**headers, "Idempotency-Key": uuid.uuid4().hex},
        )
        assert moved.status_code == 201, moved.text
        if action["type"] == "CallBreakingNews":
            return moved.json()["version"]
    raise AssertionError(f"no news called in {NEWS_MOVES_TO_A_CALL} moves")


# --- Hanabi ---------------------------------------------------------------------------------


def test_hanabi_fits_a_narrow_screen_and_shows_a_spectator_what_the_clues_told(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """Ada clues Bob; Bob, on a 200 px wide screen, sees no horizontal scroll, his Play and
    Discard buttons level, suit symbols on Ada's cards, the variant and the clue history; a
    spectator (also 200 px wide) sees no face in any hand, the line that says why, and on each
    card of Bob's what the clue told."""
    (ada, bob), match_id = seat_two(people, "hanabi", HANABI_SEED)
    watcher = people(NARROW)
    watcher.open(f"#/matches/{match_id}")
    expect(watcher.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    bob.page.set_viewport_size(NARROW)
    start = server_match(gateway, match_id)
    wait_until_shown(ada.page, start["version"])
    ada.page.get_by_test_id("clues-1").get_by_role("button").first.click()
    expect(ada.page.get_by_test_id("version")).not_to_have_text(str(start["version"]))
    match = server_match(gateway, match_id)
    view = match["view"]  # the spectator's
    [clue] = view["clues"]
    assert (clue["seat"], clue["target"], clue["turn"]) == (0, 1, 0)
    for person in (ada, bob, watcher):
        page = person.page
        wait_until_shown(page, match["version"])
        for words in view["variant"]:
            expect(page.get_by_test_id("variant")).to_contain_text(words)
        records = page.get_by_test_id("clue-record")
        expect(records).to_have_count(1)
        slots = ", ".join(map(str, clue["slots"]))
        expect(records).to_contain_text(re.compile(rf"^Turn 1: .* on cards? {slots}$"))
    expect(watcher.page.get_by_test_id("clue-record")).to_have_text(
        re.compile(r"^Turn 1: ada clued bob: ", re.IGNORECASE)
    )
    expect(bob.page.get_by_test_id("clue-record")).to_contain_text("clued you")

    for person in (bob, watcher):  # nothing wider than the 200 px screen
        assert person.page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    screenshot(bob.page, "hanabi-200px")
    screenshot(watcher.page, "hanabi-spectator")

    # Bob's own cards: Play and Discard (a token is spent) at one height each, level slot by slot
    hand = bob.page.get_by_test_id("my-hand")
    expect(hand.get_by_role("button", name="Discard")).to_have_count(len(view["hands"][1]))
    heights, offsets = set(), set()
    for slot in hand.locator(".slot").all():
        face = box(slot.locator(".card"))
        for name in ("Play", "Discard"):
            button = box(slot.get_by_role("button", name=name))
            heights.add(round(button["height"]))
            offsets.add((name, round(button["y"] - face["y"])))
    assert len(heights) == 1 and len(offsets) == 2, (heights, offsets)

    # Ada's cards, face up for Bob: each with its suit's symbol
    faces = bob.page.get_by_test_id("hand-0").locator(".card")
    expect(faces).to_have_count(len(view["hands"][0]))
    for face in faces.all():
        suit = (face.get_attribute("aria-label") or "").split()[0]
        expect(face.locator(".symbol")).to_have_text(SUIT_SYMBOLS[suit])

    # the spectator: no face, the reason, and on each of Bob's cards what the clue told
    page = watcher.page
    expect(page.get_by_test_id("why-hidden")).to_contain_text("Spectators see no card face")
    expect(page.locator(".hand .card:not(.hidden)")).to_have_count(0)
    told = page.get_by_test_id("hand-1").get_by_test_id("knowledge")
    expect(told).to_have_count(len(view["hands"][1]))  # touched or not, each card learnt
    said = clue["colour"] or str(clue["rank"])
    for card in view["hands"][1]:
        face = page.get_by_test_id("hand-1").locator(f".slot[data-order='{card['order']}'] .card")
        if card["order"] in clue["touched"]:
            expect(face).to_have_attribute(
                "aria-label", re.compile(rf"^hidden card, clued .*{said}")
            )
        else:
            expect(face).not_to_have_attribute("aria-label", re.compile(said))
    expect(bob.page.get_by_test_id("why-hidden")).to_contain_text("never see your own cards")


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found
