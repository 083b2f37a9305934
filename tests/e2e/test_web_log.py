"""The match log and the replay in words, in the OS's Chromium against ``playtable stack``
behind its gateway: a match of each game, played to its end over HTTP with random legal moves,
then read by its first player in the browser; and matches played as the heuristic bots play,
for the events random moves never bring (a successful Hanabi play, Carcassonne's messengers,
Breaking News's stories, silences and tie votes, a seat given to someone else). Every kind of
event it holds reads as a sentence (no event names, no JSON, no field names) naming the seat it
is about, Hanabi's clues by slot; the replay says which event led to the version shown in the
log's words, explains "full" and keeps the version shown, marked as loading, while the next
loads. A wrong app key's problem shows once."""

from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, Route, expect

from services.bots.policies import load_policies
from tests.e2e.conftest import Gateway
from tests.e2e.play import auth, open_table, play_to_end
from tests.e2e.test_bot_service import a_tie_two_vote_on, news_match, play_to_the_vote
from tests.e2e.web import Player, screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.shares_gateway]

SEED = 5
GAMES: dict[str, dict[str, Any]] = {
    "hanabi": {},
    "carcassonne": {"messengers": True, "inns_cathedrals": True, "traders_builders": True},
    "dingo": {"target_score": 2},
    "breaking_news": {},
}
"""Each game with the options that bring out its events (Carcassonne's messages and both
expansions' pieces, goods and bonuses) or keep the match short (Dingo's target)."""
CHANCE_EVENTS = {"CardDrawn", "TileDrawn", "ElementDrawn", "ObjectDrawn", "MessageDrawn"}
"""Events a seat's draw makes, which another seat's move may cause: the line names only the
drawer."""
FIELD_WORDS = re.compile(
    r"\b(seats?|touched|rotation|followers?\s\d|ranch\s\d|fuses_burned|reported_by|order)\b"
)
"""What a line read as raw data showed: field names followed by their values."""
LOG_LENGTH = 30
"""The lines the match page's log shows (src/events.tsx)."""

POLICIES = load_policies()


def history(gateway: Gateway, match_id: str, token: str | None) -> list[dict[str, Any]]:
    """The match's events as the seat holding ``token`` (None: a spectator) may see them."""
    events: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        headers = auth(token) if token else {}
        page = gateway.client.get(f"/matches/{match_id}/events", params=params, headers=headers)
        assert page.status_code == 200, page.text
        events += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if not cursor:
            return events


def hanabi_slots(events: list[dict[str, Any]]) -> dict[int, str]:
    """Each Hanabi clue's touched cards as slots from the left ("slots 2 and 4"), by version,
    from the hands folded independently of the client: dealt, played away, drawn to the right."""
    hands: list[list[int]] = []
    said: dict[int, str] = {}
    for event in events:
        data = event["data"]
        if data["type"] == "CardsDealt":
            hands = [[card["order"] for card in hand] for hand in data["hands"]]
        elif data["type"] in {"CardPlayed", "CardMisplayed", "CardDiscarded"}:
            hands[data["seat"]].remove(data["card"])
        elif data["type"] == "CardDrawn":
            hands[data["seat"]].append(data["card"])
        elif data["type"] == "ClueGiven" and data["touched"]:
            slots = sorted(hands[data["target"]].index(card) + 1 for card in data["touched"])
            words = [str(slot) for slot in slots]
            listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
            said[event["version"]] = f"{'slot' if len(slots) == 1 else 'slots'} {listed}"
    return said


def assert_sentence(line: str, event: dict[str, Any], players: list[str], you: int) -> None:
    """``line`` says ``event`` in a player's words, naming the seat it is about."""
    data = event["data"]
    kind = data["type"]
    assert kind not in line.replace(" ", ""), line
    assert not re.search(r"[{}\[\]_]", line), line
    assert not FIELD_WORDS.search(line), line
    about = data.get("seat")
    if isinstance(about, int):
        assert players[about] in line, (line, data)
        if kind in CHANCE_EVENTS:
            others = [name for seat, name in enumerate(players) if seat != about]
            assert not any(name in line for name in others), (line, data)
    if kind == "CardDrawn" and event["game"] == "hanabi" and about == you:
        assert line == f"{players[you]} drew a card"  # her own cards are hidden from her
    if kind == "CardDrawn" and event["game"] == "hanabi" and about != you:
        assert line == f"{players[about]} drew {data['suit']} {data['rank']}"


def replay_line(page: Page, version: int) -> str:
    """The replay's line at ``version``: what led to it."""
    page.locator("input[name=version]").fill(str(version))
    expect(page.get_by_test_id("replay-version")).to_have_text(str(version))
    said = page.get_by_test_id("replay-move")
    expect(said).to_have_text(re.compile(rf"^v{version}: [^…]"))
    return said.inner_text().removeprefix(f"v{version}: ")


def as_seat(person: Player, match_id: str, token: str) -> None:
    """This browser holds the seat ``token`` in the match (as the table page keeps it), from
    before its pages' scripts run."""
    keep = f"localStorage.setItem('playtable.match.{match_id}.bearer', {json.dumps(token)})"
    person.page.context.add_init_script(keep)
    if person.page.url.startswith(person.base_url):  # a page of the app is open already
        person.page.evaluate(keep)


def first_replayable(gateway: Gateway, match_id: str) -> int:
    """The match's first version the replay shows (the versions of its setup come before)."""
    version = 1
    while (
        answer := gateway.client.get(f"/matches/{match_id}/replay?version={version}")
    ).status_code == 404:
        assert answer.json()["title"] == "No such version", answer.text
        version += 1
    assert answer.status_code == 200, answer.text
    return version


@pytest.mark.parametrize("game", GAMES)
def test_every_event_reads_as_a_sentence_in_the_log_and_the_replay(
    game: str, gateway: Gateway, people: Callable[..., Player]
) -> None:
    match_id, tokens = open_table(gateway.stack, game, 2, GAMES[game], seed=SEED)
    play_to_end(gateway.stack, match_id, tokens, random.Random(SEED))
    assert_log_in_words(gateway, people, match_id, tokens[0])


def assert_log_in_words(
    gateway: Gateway,
    people: Callable[..., Player],
    match_id: str,
    token: str,
    shot: str | None = None,
) -> set[str]:
    """The finished match's log and replay, read by the seat holding ``token`` in the
    browser, say each of its events as a sentence: the kinds of event it holds. The log's
    screenshot is kept as ``shot`` (``log-<game>`` by default)."""
    final = gateway.client.get(f"/matches/{match_id}").json()
    assert final["status"] == "finished", final
    game = final["game"]
    players = final["players"]
    events = history(gateway, match_id, token)
    by_version = {event["version"]: event for event in events}
    clues = hanabi_slots(events) if game == "hanabi" else {}
    ada = people()
    as_seat(ada, match_id, token)

    # the match page's log: the latest lines, the earlier ones folded away; every one a sentence
    ada.open(f"#/matches/{match_id}")
    page = ada.page
    expect(page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
    result = page.get_by_test_id("result")  # how it ended in words too
    for seat, score in enumerate(final["result"]["scores"]):
        expect(result).to_contain_text(f"{players[seat]} {score}")
    expect(result).not_to_contain_text("_")
    latest = page.get_by_test_id("event-log").locator("li")
    expect(latest).to_have_count(min(LOG_LENGTH, len(events)))
    expect(latest.first).to_have_attribute("value", str(events[-1]["version"]))
    earlier = page.get_by_test_id("event-log-earlier").locator("li")
    expect(earlier).to_have_count(max(0, len(events) - LOG_LENGTH))
    read = "(all) => all.map((li) => [li.value, li.textContent])"
    lines = dict(latest.evaluate_all(read) + earlier.evaluate_all(read))
    assert sorted(lines) == sorted(by_version)
    screenshot(page, shot or f"log-{game}")
    for version, line in lines.items():
        assert_sentence(line, by_version[version], players, you=0)
        if version in clues:
            assert line.endswith(clues[version]), (line, by_version[version])
    kinds = {event["data"]["type"] for event in events}
    assert len(clues) > 1 if game == "hanabi" else True

    # the replay says what led to each version in the log's own words
    first = first_replayable(gateway, match_id)
    last_of_kind = {event["data"]["type"]: event["version"] for event in events[first - 1 :]}
    ada.open(f"#/matches/{match_id}/replay")
    for version in sorted(last_of_kind.values()):
        assert replay_line(page, version) == lines[version]
    # the setup's versions come before the first one a replay shows: it settles there
    page.locator("input[name=version]").fill("1")
    expect(page.get_by_test_id("replay-version")).to_have_text(str(first))
    expect(page.get_by_role("button", name="Back")).to_be_disabled()
    expect(page.get_by_test_id("problem")).to_have_count(0)
    print(f"{game}: {len(events)} events, replayable from {first}, kinds {sorted(kinds)}")
    return kinds


def play_by_policies(
    gateway: Gateway,
    match_id: str,
    tokens: list[str],
    rng: random.Random,
    interrupt: bool = False,
) -> None:
    """The first seat to move plays as its game's heuristic bot until the match ends; with
    ``interrupt``, a listener reports silence during the first story told (Breaking News)."""
    stack, url = gateway.stack, f"/matches/{match_id}"
    for _ in range(2000):
        match = stack.match.get(url).json()
        if match["status"] == "finished":
            return
        seat = match["to_move"][0]
        mine = stack.match.get(url, headers=auth(tokens[seat])).json()
        if interrupt and mine["view"].get("phase") == "story":
            seat, interrupt = (seat + 1) % len(tokens), False
        listed = stack.match.get(
            f"{url}/actions", params={"version": match["version"]}, headers=auth(tokens[seat])
        )
        assert listed.status_code == 200, listed.text
        actions = listed.json()["actions"]
        silence = [action for action in actions if action["type"] == "ReportSilence"]
        action = silence[0] if silence and seat != match["to_move"][0] else None
        action = action or POLICIES[f"{match['game']}-heuristic"](mine["view"], actions, rng)
        move = {"game": match["game"], "expected_version": match["version"], "action": action}
        headers = {**auth(tokens[seat]), "Idempotency-Key": uuid.uuid4().hex}
        moved = stack.match.post(f"{url}/actions", json=move, headers=headers)
        assert moved.status_code == 201, moved.text
    raise AssertionError(f"match {match_id} did not end in 2000 moves")


def reseated(gateway: Gateway, match_id: str, seat: int, name: str) -> str:
    """The app gives ``seat`` to ``name`` (``PlayerReseated``): the seat's new token."""
    answer = gateway.client.post(f"/matches/{match_id}/seats/{seat}/token", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


SKILLED: dict[str, set[str]] = {
    "hanabi": {"CardPlayed", "PlayerReseated"},
    "carcassonne": {
        "FigureAdvanced",
        "MessageDrawn",
        "MessageResolved",
        "BuilderTurn",
        "GoodsTaken",
        "BonusScored",
    },
    "breaking_news": {
        "BreakingNewsCalled",
        "StoryInterrupted",
        "CardTurnedFaceDown",
        "StartingCardSetAside",
    },
    "breaking_news-vote": {"VotingOpened", "VoteCast"},
}
"""The events random moves never bring, which matches played as the heuristic bots play
(a story interrupted, a seat given to someone else, a tie voted on, a builder's second tile,
goods taken and their bonus) do."""
SKILLED_SEED = 4
"""A deal whose Breaking News layout sets a starting card aside."""


@pytest.mark.parametrize("case", SKILLED)
def test_events_of_skilled_play_read_as_sentences_too(
    case: str, gateway: Gateway, people: Callable[..., Player]
) -> None:
    stack = gateway.stack
    if case == "breaking_news-vote":  # a deal the heuristic plays to a tie, then the vote
        seed, voters = a_tie_two_vote_on()
        match_id, tokens = news_match(stack, seed, {})
        assert play_to_the_vote(stack, match_id, tokens, seed) == voters
        play_by_policies(gateway, match_id, tokens, random.Random(seed))
    else:
        options = {
            "hanabi": {},
            "carcassonne": {"messengers": True, "inns_cathedrals": True, "traders_builders": True},
            "breaking_news": {"mode": "advanced", "stopwatch": True},
        }[case]
        match_id, tokens = open_table(stack, case, 3, options, seed=SKILLED_SEED)
        if case == "hanabi":
            tokens[1] = reseated(gateway, match_id, 1, "Bea")
        rng = random.Random(SKILLED_SEED)
        play_by_policies(gateway, match_id, tokens, rng, interrupt=case == "breaking_news")
    kinds = assert_log_in_words(gateway, people, match_id, tokens[0], shot=f"log-{case}-skilled")
    assert SKILLED[case] <= kinds, SKILLED[case] - kinds


def shown_lines(page: Page, kind: str) -> list[tuple[int, str]]:
    """The match page's log lines of events of ``kind``, once there is one: version and text."""
    lines = page.get_by_test_id("event-log").locator(f"li[data-type={kind}]")
    expect(lines.first).to_be_visible()
    return lines.evaluate_all("(all) => all.map((li) => [li.value, li.textContent])")


def test_timeouts_bots_taking_over_and_a_player_leaving_read_as_sentences(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    """The seats' and clocks' events any match may hold, in a spectator's log and in the log of
    a player who stays."""
    timed = {"clock": {"per_move_s": 1}, "on_timeout": "bot", "bot": "hanabi-heuristic"}
    timed_id, timed_tokens = open_table(gateway.stack, "hanabi", 2, hosting=timed)
    left_id, left_tokens = open_table(gateway.stack, "hanabi", 2, hosting={})
    ada = people()
    # nobody moves: the clocks run out and the bot plays both seats, which a spectator watches
    # (a seat's token no longer works once a bot holds it)
    ada.open(f"#/matches/{timed_id}")
    seen = {kind: shown_lines(ada.page, kind) for kind in ("TurnTimedOut", "BotTookOver")}
    seen["ClockUpdated"] = shown_lines(ada.page, "ClockUpdated")
    events = {event["version"]: event for event in history(gateway, timed_id, None)}

    left = gateway.client.post(
        f"/matches/{left_id}/leave",
        headers={**auth(left_tokens[1]), "Idempotency-Key": uuid.uuid4().hex},
    )
    assert left.status_code in {200, 201}, left.text
    as_seat(ada, left_id, left_tokens[0])
    ada.open(f"#/matches/{left_id}")
    expect(ada.page.get_by_test_id("match")).to_have_attribute("data-status", "finished")
    for kind in ("PlayerLeft", "MatchForfeited"):
        seen[kind] = shown_lines(ada.page, kind)
    events |= {
        (left_id, event["version"]): event for event in history(gateway, left_id, left_tokens[0])
    }
    players = ["player0", "player1"]
    for kind, lines in seen.items():
        match_of = left_id if kind in {"PlayerLeft", "MatchForfeited"} else None
        for version, line in lines:
            event = events[(match_of, version) if match_of else version]
            assert event["data"]["type"] == kind
            assert_sentence(line, event, players, you=0)
            if kind in {"MatchForfeited"}:
                assert players[1] in line and "left" in line, line
    print({kind: lines[0][1] for kind, lines in seen.items()})


def test_the_replay_explains_full_and_keeps_its_view_while_the_next_version_loads(
    gateway: Gateway, people: Callable[..., Player]
) -> None:
    match_id, tokens = open_table(gateway.stack, "hanabi", 2, seed=SEED)
    final = play_to_end(gateway.stack, match_id, tokens, random.Random(SEED))
    watcher = people()
    watcher.open(f"#/matches/{match_id}/replay")
    page = watcher.page
    explained = page.get_by_test_id("full-explained")
    expect(explained).to_contain_text("the complete state, every hand and the deck included")
    expect(explained).to_contain_text("shown only once the match is over")
    expect(page.locator("input[name=full]")).to_be_enabled()  # this one is over
    expect(page.get_by_test_id("replay-version")).to_have_text(str(final["version"]))
    middle = final["version"] // 2
    replay_line(page, middle)
    expect(page.get_by_test_id("replay-loading")).to_have_count(0)

    held: list[Route] = []
    page.route("**/matches/*/replay?*", lambda route: held.append(route))
    page.get_by_role("button", name="Forward").click()
    loading = page.get_by_test_id("replay-loading")
    expect(loading).to_be_visible()
    expect(loading).to_have_text(f"Loading version {middle + 1}…")
    shown = page.get_by_test_id("replay")
    expect(shown).to_have_attribute("data-version", str(middle))  # the last one stays
    expect(shown).to_have_attribute("aria-busy", "true")
    screenshot(page, "replay-loading")
    assert len(held) == 1
    held[0].continue_()
    page.unroute("**/matches/*/replay?*")
    expect(shown).to_have_attribute("data-version", str(middle + 1))
    expect(loading).to_have_count(0)
    expect(page.get_by_test_id("replay-move")).to_have_text(re.compile(rf"^v{middle + 1}: "))


def test_a_wrong_app_key_shows_its_problem_once(people: Callable[..., Player]) -> None:
    """The lobby's list and its form both meet the wrong key: one problem on screen."""
    person = people()
    person.open()
    page = person.page
    page.locator("input[name=app-key]").fill("pt_wrong")
    page.get_by_role("button", name="Save").click()
    problems = page.get_by_test_id("problem")
    expect(problems).to_have_count(1)
    expect(problems).to_contain_text("Unknown API key")

    held: list[Route] = []
    page.route("**/tables", lambda route: held.append(route))
    create = page.get_by_role("button", name="Create table")
    create.click()
    expect(create).to_be_disabled()  # sent, not answered yet
    held[0].continue_()
    page.unroute("**/tables")
    expect(create).to_be_enabled()  # refused: drawn with the form's problem
    expect(problems).to_have_count(1)
    expect(problems).to_contain_text("Unknown API key")
