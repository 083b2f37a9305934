"""Carcassonne with Inns & Cathedrals and Traders & Builders in the web client, in the OS's
Chromium against ``playtable stack`` behind its gateway: the lobby's form offers both
expansions by their catalogue titles and help, and a sixth seat only with Inns & Cathedrals
(a sixth colour), not Traders & Builders; two people (one on a phone-sized screen) play a
short stacked match by clicking: a large follower (chosen on the board's spot), a city with
wine completed, a builder, the builder's second tile and a pig, to the final scoring with the
goods bonus. After every move both tables show the server's tiles, followers, builders and pigs
and each seat's supply and goods. Tiles with every inn, cathedral and goods mark show each
named and big enough to tell apart, from the default zoom to the smallest. Screenshots of the
table are kept (tests/e2e/web.py: ``ARTIFACTS``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Gateway
from tests.e2e.test_web_carcassonne import assert_board_shows, play, wait_until_shown
from tests.e2e.web import Player, screenshot, seat_two, server_match

pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]

SEED = 3
EXPANSIONS = {"inns_cathedrals": True, "traders_builders": True}
ORDER = ["TO", "E", "E", "U", "B", "U", "B", "U", "U", "B"]
"""The start tile TO (a city west-east with wine), then the stack: two city caps that close
that city, straight roads for Ada, cloisters for Bob."""
MOVES: list[tuple[int, int, int, int | None, str]] = [
    (1, 0, 3, 0, "large_follower"),  # ada: a cap on the wine city, her large follower in it
    (-1, 0, 1, None, "follower"),  # bob closes the city: ada scores it, bob takes the wine
    (2, 0, 0, 0, "follower"),  # ada: a road with a follower
    (0, 1, 0, None, "follower"),
    (2, 1, 0, 0, "builder"),  # ada's builder on her road
    (0, -1, 0, None, "follower"),
    (2, -1, 0, 1, "follower"),  # her road again, a farmer east of it: a second tile
    (3, -1, 0, 2, "pig"),  # the second tile, her pig on the farmer's field
    (-1, 1, 0, None, "follower"),  # the last tile: the final scoring
]
"""Each move as (x, y, rotation, spot, piece), Ada's and Bob's in turn but for the builder's
second tile."""
BUILDER_TURN = 7
"""The move placing the builder's second tile."""


def test_a_short_match_with_both_expansions_by_clicking(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    lobby = people()
    lobby.open()
    form = lobby.page.get_by_test_id("create-table")
    form.locator("select[name=game]").select_option("carcassonne")
    for name, title, help in (
        ("inns_cathedrals", "Inns & Cathedrals", "large follower"),
        ("traders_builders", "Traders & Builders", "builder"),
    ):
        option = form.locator(f"[data-option={name}]")
        expect(option.locator("label")).to_have_text(title)
        expect(option.locator(".help")).to_contain_text(help)
    bounds = form.get_by_test_id("seat-bounds")
    expect(bounds).to_have_text("2 to 5 players (6 with The Messengers or Inns & Cathedrals)")
    form.locator("input[name=traders_builders]").check()  # no sixth colour
    expect(bounds).to_have_text("2 to 5 players (6 with The Messengers or Inns & Cathedrals)")
    form.locator("input[name=inns_cathedrals]").check()
    expect(bounds).to_have_text("2 to 6 players")

    players, match_id = seat_two(
        people, "carcassonne", SEED, checked=EXPANSIONS, filled={"tile_order": ",".join(ORDER)}
    )
    for player in players:  # the match has begun: its start tile is shown
        expect(player.page.get_by_test_id("carc-board")).to_have_attribute("data-placed", "1")
    for move, (x, y, rotation, spot, piece) in enumerate(MOVES):
        match = server_match(gateway, match_id)
        seat = match["to_move"][0]
        page = players[seat].page
        wait_until_shown(page, match["version"])
        if move == BUILDER_TURN:
            for other, player in enumerate(players):
                whose = "Your" if other == seat else f"{match['players'][seat]}'s"
                expect(player.page.get_by_test_id("carc-builder-turn")).to_have_text(
                    f"{whose} builder: a second tile (this one earns no third)."
                )
            screenshot(players[0].page, "carcassonne-expansions")
            phone = players[1].page
            for width in (390, 240):  # the supplies and goods fit a phone, however narrow
                phone.set_viewport_size({"width": width, "height": 844})
                expect(phone.get_by_test_id("carc-goods").first).to_be_visible()
                screenshot(phone, f"carcassonne-expansions-phone-{width}px")
                assert phone.evaluate("document.documentElement.scrollWidth <= innerWidth")
        place(page, x, y, rotation, spot, piece, on_board=move == 0)
        expect(page.get_by_test_id("version")).not_to_have_text(str(match["version"]))
        after = server_match(gateway, match_id)
        for player in players:
            wait_until_shown(player.page, after["version"])
            assert_pieces_shown(player.page, after["view"])

    final = server_match(gateway, match_id)
    assert final["status"] == "finished", final["status"]
    view = final["view"]
    assert view["pieces"]["goods"][1]["wine"] == 1
    ada = players[0].page
    expect(ada.get_by_test_id("carc-goods").nth(1)).to_have_attribute("data-wine", "1")
    shown = [int(cell) for cell in ada.get_by_test_id("carc-score").all_inner_texts()]
    assert shown == final["result"]["scores"]
    log = ada.locator(".event-log")  # the latest lines and the earlier ones
    expect(log).to_contain_text("bob completed a city with goods and took 1 wine token")
    expect(log).to_contain_text("bob scored 10 points for the most wine")
    expect(log).to_contain_text("ada's builder: a second tile this turn")
    builder = ada.locator("[data-testid=carc-piece][data-piece=builder]")
    expect(builder.locator("title")).to_have_text("Your builder on a road")
    screenshot(ada, "carcassonne-expansions-finished")


def place(
    page: Page, x: int, y: int, rotation: int, spot: int | None, piece: str, on_board: bool
) -> None:
    """Place the drawn tile by clicking: its square, its rotation, the piece (on the board's
    spot marker, stepping through the pieces listed there, or by its chip), then Place."""
    page.locator(f"[data-testid=carc-legal][data-x='{x}'][data-y='{y}']").click()
    page.locator(f"[data-testid=carc-rotation][data-rotation='{rotation}']").click()
    ghost = page.get_by_test_id("carc-ghost")
    expect(ghost).to_have_attribute("data-rotation", str(rotation))
    if spot is not None and on_board:
        marker = ghost.locator(f"[data-testid=carc-spot][data-spot='{spot}']")
        marker.click()  # the first piece listed there: a follower
        expect(marker).to_have_attribute("data-piece", "follower")
        marker.click()  # the next: the large follower
        expect(marker).to_have_attribute("data-piece", piece)
        expect(marker.locator("title")).to_contain_text(f"Your {piece.replace('_', ' ')}")
        screenshot(page, "carcassonne-expansions-choosing")
    elif spot is not None:
        page.locator(
            f"[data-testid=carc-follower-choice][data-piece={piece}][data-spot='{spot}']"
        ).click()
    button = page.get_by_test_id("carc-place")
    if spot is not None:
        expect(button).to_have_text(f"Place tile and {piece.replace('_', ' ')}")
        expect(button).to_have_attribute("data-action", re.compile(f'"piece":"{piece}"'))
    button.click()


def assert_pieces_shown(page: Page, view: dict[str, Any]) -> None:
    """The page's board has the view's tiles, followers (the large ones drawn as such),
    builders and pigs; each seat's supply and goods are the view's."""
    assert_board_shows(page, view)
    board = page.get_by_test_id("carc-board")
    large = [f for f in view["followers"] if f.get("large")]
    expect(board.locator("[data-testid=carc-follower][data-piece=large_follower]")).to_have_count(
        len(large)
    )
    expect(board.get_by_test_id("carc-piece")).to_have_count(len(view["pieces"]["pieces"]))
    supplies = page.get_by_test_id("carc-supply")
    goods = page.get_by_test_id("carc-goods")
    for seat, followers in enumerate(view["supply"]):
        supply = supplies.nth(seat)
        expect(supply).to_have_attribute("data-followers", str(followers))
        for piece, count in view["pieces"]["supply"][seat].items():
            expect(supply).to_have_attribute(f"data-{piece.replace('_', '-')}", str(count))
        for good, count in view["pieces"]["goods"][seat].items():
            expect(goods.nth(seat)).to_have_attribute(f"data-{good}", str(count))


MARKS_ORDER = ["IO", "TS", "TC", "TQ", "IB", "IL"]
"""A start tile with an inn, then tiles with wine, cloth and grain, a cathedral and an inn."""
MARKS = {"inn": 2, "wine": 1, "cloth": 1, "grain": 1, "cathedral": 1}
"""The marks those tiles carry, by name."""
SMALLEST_MARK_PX = 14
"""The least a mark measures on screen either way, at every zoom: drawn to scale, the board's
smallest tiles (36 px) had goods 10 px across, too small to tell wine from cloth (the client
draws them at least 15)."""


def test_the_marks_are_legible_and_named_at_every_zoom(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """Tiles with every mark, placed by clicking (the first square listed, a follower now and
    then); on Ada's board each mark is named and at least ``SMALLEST_MARK_PX`` across, from
    the default zoom down to the smallest."""
    players, match_id = seat_two(
        people,
        "carcassonne",
        SEED,
        checked=EXPANSIONS,
        filled={"tile_order": ",".join(MARKS_ORDER)},
    )
    final, _ = play(gateway, players, match_id, len(MARKS_ORDER))
    assert final["status"] == "finished", final["status"]
    assert len(final["view"]["board"]) == len(MARKS_ORDER)
    ada = players[0].page
    marks = ada.get_by_test_id("carc-board").locator(".carc-tile [data-testid=carc-mark]")
    zoom_out = ada.get_by_test_id("carc-zoom-out")
    while True:
        size = ada.get_by_test_id("carc-board").get_attribute("data-tile-px")
        screenshot(ada, f"carcassonne-marks-{size}px")
        assert_marks_legible(marks)
        if zoom_out.is_disabled():
            break
        zoom_out.click()
        expect(ada.get_by_test_id("carc-board")).not_to_have_attribute("data-tile-px", size or "")


def assert_marks_legible(marks: Locator) -> None:
    """``MARKS`` are all there, each with an accessible name that starts with what it is, and
    at least ``SMALLEST_MARK_PX`` wide and high."""
    expect(marks).to_have_count(sum(MARKS.values()))
    shown: dict[str, int] = {}
    for mark in marks.all():
        name = mark.get_attribute("data-mark") or ""
        shown[name] = shown.get(name, 0) + 1
        expect(mark).to_have_accessible_name(re.compile(f"^{name.capitalize()}\\b"))
        box = mark.bounding_box()
        assert box is not None, name
        assert min(box["width"], box["height"]) >= SMALLEST_MARK_PX, (name, box)
    assert shown == MARKS
