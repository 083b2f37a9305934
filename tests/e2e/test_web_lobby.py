"""The lobby a person enjoys (issue 34), in the OS's Chromium behind the gateway: the create form
speaks the catalogue (option titles and help, a dependent option disabled until its requirement,
seats bounded by the game and its options (Carcassonne's sixth only with a sixth colour), the
hosting policies in the game's words), the creator names the table and sits in the seat they
pick, a joiner picks a free seat, the creator closes the table they wait at alone, and the
lobby remembers this browser's tables and lists running matches to watch. Each step is checked
against the server too."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import Gateway
from tests.e2e.play import auth
from tests.e2e.web import PHONE, Player, screenshot, seat_row

pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]


def catalogue(gateway: Gateway, game: str) -> dict:
    return gateway.client.get(f"/games/{game}").json()


def test_the_form_shows_titles_and_help_and_holds_a_dependent_option_back(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    ada = people()
    ada.open()
    form = ada.page.get_by_test_id("create-table")
    form.locator("select[name=game]").select_option("carcassonne")
    for option in catalogue(gateway, "carcassonne")["options"]:
        shown = form.locator(f"[data-option={option['name']}]")
        expect(shown.locator("label")).to_contain_text(option["title"])
        expect(shown.locator(".help")).to_contain_text(option["description"])
        if "_" in option["name"]:  # the title, not the raw name
            expect(shown).not_to_contain_text(option["name"])
    edition = form.locator("select[name=messengers_edition]")
    alone = form.locator("input[name=zmg_alone_rule]")
    expect(edition).to_be_disabled()
    expect(form.locator("[data-option=messengers_edition]")).to_contain_text("needs The Messengers")
    form.locator("input[name=messengers]").check()
    expect(edition).to_be_enabled()
    expect(alone).to_be_disabled()  # it needs the C2 edition too
    edition.select_option("C2")
    expect(alone).to_be_enabled()
    screenshot(ada.page, "lobby-form")
    form.locator("input[name=messengers]").uncheck()
    expect(edition).to_be_disabled()
    expect(alone).to_be_disabled()


def test_seats_are_bounded_by_the_game_and_the_policies_are_the_games(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    ada = people()
    ada.open()
    form = ada.page.get_by_test_id("create-table")
    seats, bounds = form.locator("input[name=seats]"), form.get_by_test_id("seat-bounds")
    form.locator("select[name=game]").select_option("carcassonne")
    (sixth,) = catalogue(gateway, "carcassonne")["players_requirements"]
    assert sixth["players"] == 6
    seats.fill("6")
    expect(seats).to_have_value("5")  # no sixth colour chosen
    expect(bounds).to_have_text("2 to 5 players (6 with The Messengers or Inns & Cathedrals)")
    form.locator("input[name=inns_cathedrals]").check()
    seats.fill("6")
    expect(seats).to_have_value("6")
    expect(bounds).to_have_text("2 to 6 players")
    expect(form.locator("select[name^=bot-]")).to_have_count(6)
    form.locator("input[name=inns_cathedrals]").uncheck()
    expect(seats).to_have_value("5")
    form.locator("input[name=messengers]").check()
    seats.fill("6")
    expect(seats).to_have_value("6")

    form.locator("select[name=game]").select_option("hanabi")
    hanabi = catalogue(gateway, "hanabi")
    form.locator("input[name=seats]").fill("9")
    expect(form.locator("input[name=seats]")).to_have_value(str(hanabi["max_players"]))
    expect(form.locator("select[name^=bot-]")).to_have_count(hanabi["max_players"])
    expect(form.get_by_test_id("seat-bounds")).to_have_text(
        f"{hanabi['min_players']} to {hanabi['max_players']} players"
    )
    form.locator("input[name=seats]").fill("1")
    expect(form.locator("select[name^=bot-]")).to_have_count(hanabi["min_players"])

    timeout = form.locator("select[name=on-timeout]")
    expect(timeout).to_be_disabled()  # no clock, nothing runs out
    form.locator("input[name=per-move]").fill("30")
    offered = [policy["name"] for policy in hanabi["timeout_policies"]]
    expect(timeout.locator("option")).to_have_text(offered)
    assert "pass" not in offered
    timeout.select_option("forfeit")
    forfeit = next(p for p in hanabi["timeout_policies"] if p["name"] == "forfeit")
    expect(form.get_by_test_id("on-timeout-help")).to_have_text(forfeit["description"])

    form.locator("select[name=game]").select_option("breaking_news")
    form.locator("input[name=per-move]").fill("30")
    breaking_news = catalogue(gateway, "breaking_news")
    passing = next(p for p in breaking_news["timeout_policies"] if p["name"] == "pass")
    timeout.select_option("pass")
    expect(form.get_by_test_id("on-timeout-help")).to_have_text(passing["description"])
    expect(form.get_by_test_id("on-timeout-help")).to_contain_text("no pass is legal")

    form.locator("input[name=creator]").fill("Ada")
    form.get_by_role("button", name="Create table").click()
    table_id = ada.wait_for_route("tables")
    hosting = gateway.client.get(f"/tables/{table_id}").json()["hosting"]
    assert hosting["clock"]["per_move_s"] == 30 and hosting["on_timeout"] == "pass"
    said = ada.page.get_by_test_id("hosting")  # the table says it before anyone starts
    expect(said).to_contain_text("30 s per move")
    expect(said).to_contain_text(passing["description"])


def test_the_creator_names_the_table_sits_where_they_chose_and_closes_it_alone(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    ada, bob = people(), people(PHONE)
    ada.open()
    form = ada.page.get_by_test_id("create-table")
    form.locator("select[name=game]").select_option("hanabi")
    form.locator("input[name=creator]").fill("Ada")
    expect(form.locator("input[name=name]")).to_have_attribute("placeholder", "Ada's Hanabi")
    table_id = ada.create_table("hanabi", 3, player="Ada", player_seat=1)
    expect(seat_row(ada.page, 1)).to_contain_text("(you)")
    table = gateway.client.get(f"/tables/{table_id}").json()
    assert table["name"] == "Ada's Hanabi"
    assert [seat["player"] for seat in table["seats"]] == [None, "Ada", None]

    bob.open(f"#/tables/{table_id}")
    expect(bob.page.locator("select[name=seat] option")).to_have_text(["Seat 0", "Seat 2"])
    bob.take_seat("bob", seat=2)
    expect(seat_row(bob.page, 2)).to_contain_text("(you)")
    seats = gateway.client.get(f"/tables/{table_id}").json()["seats"]
    assert [seat["player"] for seat in seats] == [None, "Ada", "bob"]

    close = ada.page.get_by_role("button", name="Close table")
    expect(seat_row(ada.page, 2)).to_contain_text("bob")  # through ada's table feed
    expect(close).to_have_count(0)  # bob sat down: closing is no longer Ada's alone
    seat_row(bob.page, 2).get_by_role("button", name="Leave seat").click()
    expect(seat_row(ada.page, 2)).to_contain_text("empty")
    close.click()
    expect(ada.page.get_by_test_id("table")).to_contain_text("closed")
    assert gateway.client.get(f"/tables/{table_id}").json()["status"] == "closed"
    expect(bob.page.get_by_test_id("table")).to_contain_text("closed")  # through the feed
    for person in (ada, bob):
        assert person.off_contract() == []


def test_the_lobby_remembers_your_tables_and_matches(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    ada = people()
    name = f"back {uuid.uuid4().hex[:8]}"
    waiting_id = ada.create_table("dingo", 2, player="Ada", filled={"name": f"{name} waiting"})
    playing_id = ada.create_table(
        "hanabi", 2, player="Ada", bots={1: "hanabi-heuristic"}, filled={"name": name}
    )
    match_id = ada.start()
    ada.page.get_by_test_id("match").wait_for()
    ada.open()  # back in the lobby, not through the browser's history

    yours = ada.page.get_by_test_id("your-tables")
    waiting = yours.locator(f"li[data-table-id='{waiting_id}']")
    playing = yours.locator(f"li[data-table-id='{playing_id}']")
    expect(waiting).to_have_attribute("data-standing", "waiting")
    expect(waiting).to_contain_text(catalogue(gateway, "dingo")["title"])
    match = gateway.client.get(f"/matches/{match_id}").json()
    assert match["to_move"] == [0]  # Ada's: the bot waits for her
    expect(playing).to_have_attribute("data-standing", "your turn")
    expect(playing).to_contain_text("Hanabi")
    screenshot(ada.page, "lobby-yours")
    playing.get_by_role("link", name=name).click()
    assert ada.wait_for_route("matches") == match_id
    expect(ada.page.get_by_test_id("match")).to_have_attribute("data-you", "0")

    ada.page.once("dialog", lambda dialog: dialog.accept())
    ada.page.get_by_role("button", name="Leave match").click()
    expect(ada.page.get_by_test_id("result")).to_be_visible()
    ada.open()
    expect(playing).to_have_attribute("data-standing", "finished")
    assert ada.off_contract() == []


def test_a_running_public_match_is_listed_to_watch_and_opens_for_a_spectator(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    client = gateway.client
    table = client.post("/tables", json={"game": "dingo", "seats": 2, "name": "to watch"}).json()
    url = f"/tables/{table['table_id']}"
    tokens = [
        client.post(f"{url}/seats", json={"name": name}).json()["token"] for name in ("cy", "di")
    ]
    started = client.post(f"{url}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    match_id = started.json()["match_id"]
    waiting = f"not started {uuid.uuid4().hex[:8]}"
    assert client.post("/tables", json={"game": "dingo", "seats": 2, "name": waiting}).is_success

    eve = people()
    eve.open()
    listed = eve.page.get_by_test_id("matches-to-watch")
    entry = listed.locator(f"li[data-match-id='{match_id}']")
    expect(entry).to_contain_text("cy, di")
    expect(listed).not_to_contain_text(waiting)
    entry.get_by_role("link", name="Watch").click()
    assert eve.wait_for_route("matches") == match_id
    expect(eve.page.get_by_test_id("match")).to_have_attribute("data-you", "spectator")
    assert eve.off_contract() == []
