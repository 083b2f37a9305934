"""The web client in the OS's Chromium against ``playtable stack`` behind its gateway: people
create, join and start tables by clicking, play Hanabi to its end, watch it live and replay it;
screenshots of the table are kept (tests/e2e/web.py: ``ARTIFACTS``)."""

from __future__ import annotations

import json
import os
import re
import signal
import time
import uuid
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, Route, expect

from services.operator.gateway import runtime_dir
from services.rules.games.hanabi.options import standard_deck
from tests.e2e.conftest import Gateway
from tests.e2e.play import open_table
from tests.e2e.web import PHONE, Player, screenshot, seat_row

pytestmark = pytest.mark.e2e  # the fixtures skip without nginx, node 20.19+ or chromium

SEED = 14
"""The deck, so every run plays the same match: after five moves it has a firework started, a
fuse burned, clues given and a card discarded, for the screenshots."""
MAX_MOVES = 80
"""The match below ends long before: its players play their first card from the fourth move on,
and the third misplay ends it."""
SCREENSHOT_AFTER = 5
SHOWN_COUNTERS = {"deck-size": "deck_size", "clue-tokens": "clue_tokens", "score": "score"}
"""The Hanabi table's counters (test ids) and the view's fields they show."""


def shown_version(page: Page) -> int:
    return int(page.get_by_test_id("version").inner_text())


def make_move(player: Player, seat: int, move: int) -> None:
    """Click one control the legal actions offer: two clues first, then a discard, then plays."""
    page = player.page
    expect(page.get_by_test_id("your-turn")).to_be_visible()
    if move < 2:
        page.get_by_test_id(f"clues-{1 - seat}").get_by_role("button").first.click()
    else:
        action = "Discard" if move == 2 else "Play"
        page.get_by_test_id("my-hand").get_by_role("button", name=action).first.click()


def settled_version(page: Page) -> int:
    """The version a mover's page shows once it offers the move: read earlier, it may still be
    the one before the match loaded, and the move's answer would look like nothing changed."""
    expect(page.get_by_test_id("your-turn")).to_be_visible()
    return shown_version(page)


def moved(player: Player, seat: int, move: int) -> int:
    """Make the move and wait until the mover's page shows its answer: the version after it."""
    before = settled_version(player.page)
    make_move(player, seat, move)
    expect(player.page.get_by_test_id("version")).not_to_have_text(str(before))
    return shown_version(player.page)


def test_two_people_play_hanabi_to_its_end_watched_live_then_replayed(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    ada, bob, watcher = people(), people(PHONE), people()
    table_id = ada.create_table("hanabi", 2, seed=SEED)
    ada.take_seat("ada")
    bob.open(f"#/tables/{table_id}")
    bob.take_seat("bob")
    match_id = ada.start()
    assert bob.wait_for_route("matches") == match_id  # bob's table page followed it there
    watcher.open(f"#/matches/{match_id}")
    expect(watcher.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")

    seats = [ada, bob]
    pages = [ada.page, bob.page, watcher.page]
    for move in range(MAX_MOVES):
        if watcher.page.get_by_test_id("match").get_attribute("data-status") == "finished":
            break
        mover = seats[move % 2]  # two players take turns, seat 0 first
        before = settled_version(mover.page)
        make_move(mover, move % 2, move)
        expect(mover.page.get_by_test_id("version")).not_to_have_text(str(before))
        version = mover.page.get_by_test_id("version").inner_text()
        last_event = mover.page.get_by_test_id("last-event")
        expect(last_event).to_have_text(re.compile(rf"^{version} \w+$"))  # from the feed
        for page in pages:  # the same moves, live, on every screen
            expect(page.get_by_test_id("version")).to_have_text(version)
            expect(page.get_by_test_id("last-event")).to_have_text(last_event.inner_text())
            newest = page.get_by_test_id("event-log").locator("li").first
            expect(newest).to_have_attribute("value", version)
        if move + 1 == SCREENSHOT_AFTER:
            screenshot(ada.page, "hanabi-mid-game")
            screenshot(bob.page, "hanabi-phone")
            assert bob.page.evaluate("document.documentElement.scrollWidth <= innerWidth")
    for page in pages:
        expect(page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
        expect(page.get_by_test_id("result")).to_be_visible()
    drawn = ada.page.get_by_test_id("event-log").locator("li[data-type=CardDrawn]")
    own, others = drawn.filter(has_text="ada drew"), drawn.filter(has_text="bob drew")
    assert own.count() and others.count()  # her own draws' cards are not in her log
    assert all(line == "ada drew a card" for line in own.all_inner_texts())
    assert all(re.fullmatch(r"bob drew \w+ [1-5]", line) for line in others.all_inner_texts())
    final = shown_version(watcher.page)

    watcher.page.get_by_role("link", name="Replay").click()
    replay = watcher.page
    shows = replay.get_by_test_id("replay-version")
    expect(shows).to_have_text(str(final))
    middle = final // 2
    replay.locator("input[name=version]").fill(str(middle))
    expect(shows).to_have_text(str(middle))
    assert_replay_shows(replay, gateway, match_id, middle)
    replay.get_by_role("button", name="Back").click()
    expect(shows).to_have_text(str(middle - 1))
    assert_replay_shows(replay, gateway, match_id, middle - 1)
    for _ in range(2):
        replay.get_by_role("button", name="Forward").click()
    expect(shows).to_have_text(str(middle + 1))
    assert_replay_shows(replay, gateway, match_id, middle + 1)
    replay.locator("input[name=full]").check()
    expect(replay.get_by_test_id("full-state")).to_contain_text('"deck"')

    # the client's only way to the server is the contract: every request was one of its
    # operations, or one of the client's own files
    for person in (ada, bob, watcher):
        assert person.off_contract() == []
    assert ("POST", f"/matches/{match_id}/actions") in ada.requests
    assert ("GET", f"/matches/{match_id}/feed") in watcher.requests


def assert_replay_shows(page: Page, gateway: Gateway, match_id: str, version: int) -> None:
    """The page draws the spectator's view at ``version`` as the API answers it."""
    answer = gateway.client.get(f"/matches/{match_id}/replay", params={"version": version})
    assert answer.status_code == 200, answer.text
    view = answer.json()["view"]
    for test_id, field in SHOWN_COUNTERS.items():
        expect(page.get_by_test_id(test_id)).to_have_text(str(view[field]))


def test_a_refused_start_shows_the_problem_title_and_detail(
    people: Callable[..., Player],
) -> None:
    ada = people()
    ada.create_table("hanabi", 2)
    ada.take_seat("ada")
    ada.page.get_by_role("button", name="Start").click()  # one of two seats taken
    expect(ada.page.get_by_test_id("problem-title")).to_have_text("Table not full")
    expect(ada.page.get_by_test_id("problem-detail")).to_have_text("1 of 2 seats are taken")


def test_a_stacked_table_says_so_before_anyone_sits_down(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    deck = list(reversed(standard_deck(5, False)))
    body = {"game": "hanabi", "seats": 2, "options": {"deck": deck}}
    created = gateway.client.post("/tables", json=body)
    assert created.status_code == 201, created.text
    guest = people()
    guest.open(f"#/tables/{created.json()['table_id']}")
    warning = guest.page.get_by_test_id("table").get_by_test_id("stacked")
    expect(warning).to_have_text("This table's deck was set by its creator (deck)")


def test_a_private_table_with_a_bot_opens_by_its_invitation_link(
    people: Callable[..., Player],
) -> None:
    ada, guest = people(), people()
    ada.create_table("hanabi", 2, private=True, bots={1: "hanabi-heuristic"})
    link = ada.page.get_by_test_id("invitation-link").input_value()
    guest.page.goto(link)  # the invitation in the link opens the private table
    expect(guest.page.get_by_test_id("table")).to_contain_text("(bot hanabi-heuristic)")
    ada.take_seat("ada")
    ada.start()
    page = ada.page
    before = settled_version(page)
    page.get_by_test_id("my-hand").get_by_role("button", name="Play").first.click()
    expect(page.get_by_test_id("version")).not_to_have_text(str(before))
    expect(page.get_by_test_id("your-turn")).to_be_visible()  # again: the bot has moved


def lose_the_answer_once(page: Page, url: str) -> None:
    """The next request to ``url`` reaches the server, but its answer never reaches the page
    (as when a connection drops): the page sees a network error."""

    def lose(route: Route) -> None:
        route.fetch()
        route.abort("connectionreset")
        page.unroute(url, lose)

    page.route(url, lose)


def test_seats_bots_leaving_and_a_rematch_by_clicking(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """At the table page a bot is seated and removed; a player finds the table in the lobby,
    takes a seat whose answer is lost (the retry gets that seat, not a second) and leaves it; in
    the match one player leaves (the table abandons it), the other sees the result and opens
    the rematch from the match page, the first takes their seat in it from the old table's
    page, and the rematch starts. Each step is checked against the server too."""
    ada, bob = people(), people(PHONE)
    name = f"seats {uuid.uuid4().hex[:8]}"
    table_id = ada.create_table("hanabi", 2, filled={"name": name})
    ada.take_seat("ada")

    def seats() -> list[dict]:
        return gateway.client.get(f"/tables/{table_id}").json()["seats"]

    seat_row(ada.page, 1).locator("select").select_option("hanabi-random")
    seat_row(ada.page, 1).get_by_role("button", name="Seat bot").click()
    expect(seat_row(ada.page, 1)).to_contain_text("(bot hanabi-random)")
    assert seats()[1]["bot"] == "hanabi-random"
    seat_row(ada.page, 1).get_by_role("button", name="Remove bot").click()
    expect(seat_row(ada.page, 1)).to_contain_text("empty")
    assert seats()[1] == {"seat": 1, "player": None, "bot": None}

    bob.open()  # the lobby lists the open table
    bob.page.get_by_test_id("tables").get_by_role("link", name=name).click()
    assert bob.wait_for_route("tables") == table_id
    lose_the_answer_once(bob.page, "**/tables/*/seats")
    bob.page.locator("input[name=player]").fill("bob")
    bob.page.get_by_role("button", name="Take a seat").click()
    expect(bob.page.get_by_test_id("problem-title")).to_have_text("No answer from the server")
    bob.take_seat("bob")  # again: the same Idempotency-Key, so the same seat, not a second
    expect(bob.page.get_by_test_id("problem")).to_have_count(0)
    assert [seat["player"] for seat in seats()] == ["ada", "bob"]
    expect(seat_row(bob.page, 1)).to_contain_text("(you)")
    expect(seat_row(ada.page, 1)).to_contain_text("bob")  # through ada's table feed
    seat_row(bob.page, 1).get_by_role("button", name="Leave seat").click()
    expect(bob.page.get_by_role("button", name="Take a seat")).to_be_visible()
    expect(seat_row(ada.page, 1)).to_contain_text("empty")
    assert seats()[1]["player"] is None
    bob.take_seat("bob")
    match_id = ada.start()
    assert bob.wait_for_route("matches") == match_id

    policies = gateway.client.get("/games/hanabi").json()["leave_policies"]
    abandon = next(policy["description"] for policy in policies if policy["name"] == "abandon")
    expect(ada.page.get_by_test_id("leaving")).to_contain_text(abandon)  # said before pressed
    asked: list[str] = []
    ada.page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    ada.page.get_by_role("button", name="Leave match").click()
    for page in (ada.page, bob.page):
        expect(page.get_by_test_id("result")).to_contain_text("forfeited by ada")
    assert abandon in asked[0]
    finished = gateway.client.get(f"/matches/{match_id}").json()
    assert finished["status"] == "finished" and finished["result"]["forfeited"] == [0]
    expect(ada.page.get_by_role("button", name="Rematch")).to_have_count(0)  # she left

    bob.page.get_by_role("button", name="Rematch").click()
    rematch_id = bob.wait_for_route("tables")
    assert rematch_id != table_id
    ada.page.get_by_role("link", name="Table", exact=True).click()
    ada.page.get_by_role("button", name="Take your seat in the rematch").click()
    ada.page.wait_for_url(re.compile(rf"#/tables/{rematch_id}$"))  # from the old table's page
    rematch = gateway.client.get(f"/tables/{rematch_id}").json()
    assert rematch["rematch_of"] == table_id
    assert [seat["player"] for seat in rematch["seats"]] == ["ada", "bob"]
    expect(seat_row(bob.page, 0)).to_contain_text("ada")
    second_match = bob.start()
    assert second_match != match_id
    assert ada.wait_for_route("matches") == second_match
    expect(ada.page.get_by_test_id("match")).to_have_attribute("data-you", "0")
    # the match's link opened afresh (its bearer not kept): the table's seat plays it
    bob.page.evaluate(f"localStorage.removeItem('playtable.match.{second_match}.bearer')")
    bob.page.reload()
    expect(bob.page.get_by_test_id("match")).to_have_attribute("data-you", "1")
    for person in (ada, bob):
        assert person.off_contract() == []


def test_a_spectator_resumes_from_its_last_event_when_the_gateway_drops_its_feed(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """The gateway is reloaded (as an operator does for a new config): its old workers close
    the feeds they carry after ``WORKER_SHUTDOWN_TIMEOUT``. The spectator's browser opens the
    feed again with ``Last-Event-ID`` set to the last event it had (the gateway's access log
    shows it), and the move made while it was away reaches it through that feed (the page
    reads the match only when an event arrives). A player's feed, opened with a single-use
    ticket, is opened again by the page with a new one, after the last event it had."""
    ada, bob, watcher = people(), people(), people()
    table_id = ada.create_table("hanabi", 2, seed=SEED)
    ada.take_seat("ada")
    bob.open(f"#/tables/{table_id}")
    bob.take_seat("bob")
    match_id = ada.start()
    watcher.open(f"#/matches/{match_id}")
    version = moved(ada, 0, 0)
    expect(watcher.page.get_by_test_id("version")).to_have_text(str(version))

    port = gateway.client.base_url.port
    assert port is not None
    master = int((runtime_dir(port) / "gateway.pid").read_text())
    with watcher.page.expect_event(
        "requestfailed", lambda request: f"/matches/{match_id}/feed" in request.url
    ):
        os.kill(master, signal.SIGHUP)
    after = moved(bob, 1, 1)  # while the spectator has no feed
    expect(watcher.page.get_by_test_id("version")).to_have_text(str(after))
    expect(watcher.page.get_by_test_id("last-event")).to_have_text(re.compile(rf"^{after} \w+$"))
    expect(ada.page.get_by_test_id("version")).to_have_text(str(after))
    last = moved(ada, 0, 2)  # and the resumed feeds carry on
    expect(watcher.page.get_by_test_id("version")).to_have_text(str(last))

    watcher.page.close()  # a feed is logged once it ends
    access_log = runtime_dir(port) / "gateway-access.log"
    resumed: list[str] = []
    deadline = time.monotonic() + 30
    while not resumed and time.monotonic() < deadline:
        feeds = [line for line in access_log.read_text().splitlines() if match_id in line]
        resumed = [line for line in feeds if "/feed " in line and "resumed_after=-" not in line]
        time.sleep(0.1)
    assert resumed, feeds
    assert int(resumed[0].rsplit("resumed_after=", 1)[1]) >= version, resumed


def test_a_player_whose_seat_a_bot_took_over_watches_on_and_is_told_why(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """The seat's token stops working once a bot holds the seat (the clock ran out): the page
    watches the match instead, says why, and shows no problem."""
    hosting = {"clock": {"per_move_s": 1}, "on_timeout": "bot", "bot": "hanabi-heuristic"}
    match_id, tokens = open_table(gateway.stack, "hanabi", 2, hosting=hosting)
    ada = people()
    ada.open()
    held = f"localStorage.setItem('playtable.match.{match_id}.bearer', {json.dumps(tokens[0])})"
    ada.page.evaluate(held)  # the seat this browser took at the table
    ada.open(f"#/matches/{match_id}")

    expect(ada.page.get_by_test_id("seat-lost")).to_be_visible()
    expect(ada.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    expect(ada.page.get_by_test_id("problem")).to_have_count(0)
    taken = gateway.client.get(f"/matches/{match_id}").json()
    assert taken["bots"].get("0") == "hanabi-heuristic"


def test_a_player_on_the_clock_is_told_what_running_out_of_time_does(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """Beside the clocks, before anything runs out, the match page tells each player what the
    table does when their time runs out, in the catalogue's words for its game (Breaking News'
    pass, and when it is a forfeit instead); a spectator, who has no time to run out, is not
    told."""
    hosting = {"clock": {"per_move_s": 600}, "on_timeout": "pass"}
    match_id, tokens = open_table(gateway.stack, "breaking_news", 2, hosting=hosting)
    policies = gateway.client.get("/games/breaking_news").json()["timeout_policies"]
    passing = next(policy["description"] for policy in policies if policy["name"] == "pass")
    ada, watcher = people(), people()
    ada.open()
    held = f"localStorage.setItem('playtable.match.{match_id}.bearer', {json.dumps(tokens[0])})"
    ada.page.evaluate(held)  # the seat this browser took at the table
    for person in (ada, watcher):
        person.open(f"#/matches/{match_id}")
    expect(ada.page.get_by_test_id("match")).to_have_attribute("data-you", "0")
    expect(ada.page.get_by_test_id("clocks")).to_be_visible()
    expect(ada.page.get_by_test_id("timing-out")).to_have_text(f"If your time runs out: {passing}")
    expect(watcher.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    expect(watcher.page.get_by_test_id("clocks")).to_be_visible()
    expect(watcher.page.get_by_test_id("timing-out")).to_have_count(0)
