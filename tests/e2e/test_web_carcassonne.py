"""Carcassonne in the web client, in the OS's Chromium against ``playtable stack`` behind its
gateway: two people (one on a phone-sized screen) play a whole 2-player match by clicking the
board (a highlighted square, a rotation, a follower spot or none), the board showing as many
tiles as the server holds after every move; then a few turns with The Messengers (a figure for
each scoring, the messages). Screenshots of the table are kept (tests/e2e/web.py:
``ARTIFACTS``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Gateway
from tests.e2e.web import Player, screenshot, seat_two, server_match

# the fixtures skip without nginx, node or chromium
pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]

SEED = 7
MAX_MOVES = 200
"""A 2-player base game ends after its 71 placements (fewer when a tile fits nowhere)."""
SCREENSHOT_AT = 36
"""Before this move and the next, a screenshot of the mover's screen (ada's desktop, bob's
phone)."""
MESSENGERS_SEED = 97
MESSENGERS_MOVES = 12
"""Actions with The Messengers: a few turns; with this seed and these clicks the eighth action
moves a figure onto a dark space and the ninth resolves the message drawn (8: score a
follower, chosen on the board)."""

expect.set_options(timeout=10_000)


def wait_until_shown(page: Page, version: int) -> None:
    expect(page.get_by_test_id("version")).to_have_text(str(version))


def click_move(page: Page, move: int) -> str:
    """One action by clicking what the table offers for the turn's phase; what was done."""
    table = page.get_by_test_id("carc-table")
    expect(table).to_have_attribute("data-your-turn", "true")
    phase = table.get_attribute("data-phase")
    if phase == "choose_figure":
        page.get_by_test_id("carc-choose-figure").nth(move % 2).click()
        return "figure"
    if phase == "resolve_message":
        targets = page.get_by_test_id("carc-target-choice")
        carry_out = page.get_by_test_id("carc-carry-out")
        if targets.count():  # message 8: a follower first (on the board), then the figure
            page.get_by_test_id("carc-target").first.click()
            carry_out.first.click()
        elif carry_out.count():
            carry_out.first.click()
        else:
            page.get_by_test_id("carc-take-points").first.click()
        return "message"
    page.get_by_test_id("carc-legal").first.click()
    ghost = page.get_by_test_id("carc-ghost")
    expect(ghost).to_be_visible()
    rotations = page.get_by_test_id("carc-rotation")
    if rotations.count() > 1:  # the first listed way, now and then the last
        rotation = rotations.last if move % 5 == 4 else rotations.first
        rotation.click()
        expect(ghost).to_have_attribute(
            "data-rotation", rotation.get_attribute("data-rotation") or ""
        )
    spots = page.get_by_test_id("carc-spot")
    if move % 3 == 0 and spots.count():  # a follower now and then, on the board's spot marker
        spots.first.click()
    place = page.get_by_test_id("carc-place")
    place.click()
    return "placement"


def assert_board_shows(page: Page, view: dict[str, Any]) -> None:
    """The page's board has the view's tiles and followers."""
    board = page.get_by_test_id("carc-board")
    expect(board).to_have_attribute("data-placed", str(len(view["board"])))
    expect(board.locator(".carc-tile")).to_have_count(len(view["board"]))
    expect(board.get_by_test_id("carc-follower")).to_have_count(len(view["followers"]))


def play(
    gateway: Gateway,
    players: list[Player],
    match_id: str,
    max_moves: int,
    before_move: Callable[[dict[str, Any], int], None] | None = None,
    watchers: tuple[Player, ...] = (),
) -> tuple[dict[str, Any], dict[str, int]]:
    """Click moves until the match ends or ``max_moves``; after each, both boards (and the
    ``watchers``') show the server's tiles and followers. ``before_move`` sees the match (both
    pages showing it) before each move. The match as the server has it, and how many of each
    kind of move."""
    done: dict[str, int] = {}
    for move in range(max_moves):
        match = server_match(gateway, match_id)
        if match["status"] == "finished":
            return match, done
        mover = players[match["to_move"][0]].page
        wait_until_shown(mover, match["version"])
        if before_move is not None:
            before_move(match, move)
        kind = click_move(mover, move)
        done[kind] = done.get(kind, 0) + 1
        expect(mover.get_by_test_id("version")).not_to_have_text(str(match["version"]))
        after = server_match(gateway, match_id)
        for player in (*players, *watchers):  # the others see it live, through the feed
            wait_until_shown(player.page, after["version"])
            assert_board_shows(player.page, after["view"])
    return server_match(gateway, match_id), done


def replayed(gateway: Gateway, match_id: str, version: int) -> dict[str, Any]:
    """The spectator's view at ``version``, as the API replays it."""
    answer = gateway.client.get(f"/matches/{match_id}/replay", params={"version": version})
    assert answer.status_code == 200, answer.text
    return answer.json()["view"]


def test_two_people_play_a_whole_carcassonne_match_by_clicking(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """A spectator watches every move live; then steps the finished match's replay."""
    started = time.monotonic()
    players, match_id = seat_two(people, "carcassonne", SEED)
    watcher = people()
    watcher.open(f"#/matches/{match_id}")
    expect(watcher.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    for player in (*players, watcher):
        expect(player.page.get_by_test_id("carc-board")).to_have_attribute("data-placed", "1")

    def mid_game(match: dict[str, Any], move: int) -> None:
        """Around move SCREENSHOT_AT, each screen when its player is to move, with a square
        chosen: the tile on it, its rotations and follower spots."""
        if move not in (SCREENSHOT_AT, SCREENSHOT_AT + 1):
            return
        seat = match["to_move"][0]
        page = players[seat].page
        page.get_by_test_id("carc-legal").first.click()
        expect(page.get_by_test_id("carc-ghost")).to_be_visible()
        expect(page.get_by_test_id("carc-place")).to_be_visible()
        screenshot(page, "carcassonne-phone" if seat == 1 else "carcassonne-mid-game")
        if seat == 1:
            assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        page.get_by_test_id("carc-cancel").click()
        expect(page.get_by_test_id("carc-ghost")).to_have_count(0)

    final, done = play(gateway, players, match_id, MAX_MOVES, mid_game, (watcher,))

    assert final["status"] == "finished", f"not over after {MAX_MOVES} moves: {done}"
    assert done.get("placement", 0) >= 60
    for player in players:
        page = player.page
        expect(page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
        expect(page.get_by_test_id("carc-status")).to_contain_text("Game over")
        expect(page.get_by_test_id("carc-legal")).to_have_count(0)
        shown = [int(cell) for cell in page.get_by_test_id("carc-score").all_inner_texts()]
        assert shown == final["result"]["scores"]
        expect(page.get_by_test_id("carc-board")).to_have_attribute(
            "data-placed", str(len(final["view"]["board"]))
        )
    screenshot(players[0].page, "carcassonne-finished")

    watcher.page.get_by_role("link", name="Replay").click()
    replay = watcher.page
    shows = replay.get_by_test_id("replay-version")
    expect(shows).to_have_text(str(final["version"]))
    assert_board_shows(replay, final["view"])
    middle = final["version"] // 2
    replay.locator("input[name=version]").fill(str(middle))
    for version, step in ((middle, None), (middle - 1, "Back"), (middle, "Forward")):
        if step is not None:
            replay.get_by_role("button", name=step).click()
        expect(shows).to_have_text(str(version))
        assert_board_shows(replay, replayed(gateway, match_id, version))
    assert 1 < len(replayed(gateway, match_id, middle)["board"]) < len(final["view"]["board"])
    print(f"carcassonne by clicking: {done} in {time.monotonic() - started:.1f}s")


def test_a_few_turns_with_the_messengers(gateway: Gateway, people: Callable[..., Player]) -> None:
    players, match_id = seat_two(
        people, "carcassonne", MESSENGERS_SEED, checked={"messengers": True}
    )
    assert server_match(gateway, match_id)["view"]["messengers"]["phase"] == "place_tile"
    for player in players:
        expect(player.page.get_by_test_id("carc-board")).to_have_attribute("data-placed", "1")
        expect(player.page.get_by_test_id("carc-preference")).to_be_visible()
        expect(player.page.get_by_test_id("carc-track")).to_be_visible()
    seen: dict[str, int] = {}

    def messenger_phases(match: dict[str, Any], move: int) -> None:
        """A figure to choose or a message drawn: both tables show it, the mover's with the
        listed choices; the first drawn message is kept as a screenshot."""
        messengers = match["view"]["messengers"]
        phase = messengers["phase"]
        if phase == "place_tile":
            return
        seen[phase] = seen.get(phase, 0) + 1
        mover = match["to_move"][0]
        for seat, player in enumerate(players):
            wait_until_shown(player.page, match["version"])
            page = player.page
            if phase == "choose_figure":
                expect(page.get_by_test_id("carc-pending")).to_be_visible()
                expect(page.get_by_test_id("carc-choose-figure")).to_have_count(
                    2 if seat == mover else 0
                )
            else:
                message = page.get_by_test_id("carc-message")
                expect(message).to_have_attribute("data-message", str(messengers["message"]))
                expect(page.get_by_test_id("carc-take-points")).to_have_count(
                    2 if seat == mover else 0
                )
        if phase == "resolve_message" and seen[phase] == 1:
            screenshot(players[mover].page, "carcassonne-messengers")

    final, done = play(gateway, players, match_id, MESSENGERS_MOVES, messenger_phases)
    assert final["status"] == "running"
    assert seen.get("choose_figure") and seen.get("resolve_message"), seen
    view = final["view"]
    for player in players:
        figures = player.page.get_by_test_id("carc-scores").locator("tbody tr")
        for seat, (first, second) in enumerate(view["messengers"]["figures"]):
            expect(figures.nth(seat)).to_contain_text(f"{first} / {second}")
    print(f"carcassonne with the messengers by clicking: {done}")
