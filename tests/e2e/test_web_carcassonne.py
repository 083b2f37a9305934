"""Carcassonne in the web client, in the OS's Chromium against ``playtable stack`` behind its
gateway: two people (one on a phone-sized screen) play a whole 2-player match by clicking the
board (a highlighted square, a rotation, a follower spot or none), the board showing as many
tiles as the server holds after every move; then a few turns with The Messengers (a figure for
each scoring, the messages); and a turn on a phone, down to 240 px wide, with the board centred
on its tiles and never under the controls. Screenshots of the table are kept (tests/e2e/web.py:
``ARTIFACTS``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, ViewportSize, expect

from tests.e2e.conftest import Gateway
from tests.e2e.web import PHONE, Player, screenshot, seat_two, server_match

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

PHONE_TURNS = 5
"""Moves before the phone's turn: a few tiles, so that the board is wider than one."""
NARROW_PHONE: ViewportSize = {"width": 240, "height": 640}


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


def test_a_turn_on_a_phone_keeps_the_board_centred_and_in_view(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """Bob's turn on a phone (390 px, then 240 px wide): on opening, the board shows its tiles
    in its middle; with a square chosen, neither that square nor the board lies under the
    controls; then he places the tile from the 240 px screen."""
    players, match_id = seat_two(people, "carcassonne", SEED)
    match, _ = play(gateway, players, match_id, PHONE_TURNS)
    assert match["to_move"] == [1], match["to_move"]
    page = players[1].page
    for viewport in (PHONE, NARROW_PHONE):
        page.set_viewport_size(viewport)
        page.reload()
        wait_until_shown(page, match["version"])
        assert_board_shows(page, match["view"])
        expect(page.get_by_test_id("carc-legal").first).to_be_visible()  # the actions came
        assert_tiles_centred(page)
        page.get_by_test_id("carc-legal").first.click()
        ghost = page.get_by_test_id("carc-ghost")
        expect(ghost).to_be_visible()
        board = box(page.locator(".carc-board-scroll"))
        controls = box(page.locator(".carc-controls"))
        assert not overlap(board, controls), (board, controls)
        assert not overlap(box(ghost), controls)
        assert shown_on_top(page, box(ghost)), "the chosen square is covered"
        screenshot(page, f"carcassonne-phone-{viewport['width']}px")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        if viewport is PHONE:
            page.get_by_test_id("carc-cancel").click()
            expect(ghost).to_have_count(0)
    page.get_by_test_id("carc-place").click()
    expect(page.get_by_test_id("version")).not_to_have_text(str(match["version"]))
    assert len(server_match(gateway, match_id)["view"]["board"]) == len(match["view"]["board"]) + 1


def assert_tiles_centred(page: Page) -> None:
    """The middle of the placed tiles' squares is the middle of the board's view (within
    2 px), once the board has settled: it scrolls to its tiles in a frame after it grows
    (the legal squares arriving), so this waits up to 5 s for that to hold."""
    deadline = time.monotonic() + 5
    while True:
        off = tiles_off_centre(page)
        if max(abs(off[0]), abs(off[1])) <= 2 or time.monotonic() > deadline:
            break
        page.wait_for_timeout(50)  # the next frames
    assert abs(off[0]) <= 2 and abs(off[1]) <= 2, off


def tiles_off_centre(page: Page) -> tuple[float, float, dict, list]:
    """How far the middle of the placed tiles' squares lies from the middle of the board's
    view (x, y in px), with that view's box and inner size."""
    view = box(page.locator(".carc-board-scroll"))
    squares = page.get_by_test_id("carc-board").evaluate(SQUARES_ON_SCREEN)
    left = min(x for x, _, _ in squares)
    right = max(x + size for x, _, size in squares)
    top = min(y for _, y, _ in squares)
    bottom = max(y + size for _, y, size in squares)
    inside = page.locator(".carc-board-scroll").evaluate(
        "(el) => [el.clientLeft, el.clientTop, el.clientWidth, el.clientHeight]"
    )
    middle_x = view["x"] + inside[0] + inside[2] / 2
    middle_y = view["y"] + inside[1] + inside[3] / 2
    return (left + right) / 2 - middle_x, (top + bottom) / 2 - middle_y, view, inside


SQUARES_ON_SCREEN = """(svg) => {
  const at = svg.getBoundingClientRect();
  return [...svg.querySelectorAll(".carc-tile")].map((tile) => {
    const m = tile.transform.baseVal.consolidate().matrix;
    return [at.x + m.e, at.y + m.f, m.a * 100];
  });
}"""
"""Each placed tile's square on the screen (x, y, side): its art may reach past it."""


def shown_on_top(page: Page, area: dict[str, float]) -> bool:
    """Whether what the page shows at the middle of ``area`` belongs to the board."""
    x, y = area["x"] + area["width"] / 2, area["y"] + area["height"] / 2
    return page.evaluate(
        "([x, y]) => !!document.elementFromPoint(x, y)?.closest('.carc-board-scroll')", [x, y]
    )


def overlap(one: dict[str, float], other: dict[str, float]) -> bool:
    return (
        one["x"] < other["x"] + other["width"]
        and other["x"] < one["x"] + one["width"]
        and one["y"] < other["y"] + other["height"]
        and other["y"] < one["y"] + one["height"]
    )


def box(locator: Locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None
    return found
