"""A stacked deck is never a secret: everyone sees which secret options a table's creator set,
with a commitment published at creation that the finished match's export opens, and no rematch
deals it again; and a private table's invitation can be rotated, revoked and bounded in the seats
it fills."""

from __future__ import annotations

import json
import random

import pytest

from services.rules.games.hanabi.cards import SUITS
from services.rules.games.hanabi.options import standard_deck
from shared.domain.commitments import commitment_of
from tests.e2e.conftest import Stack
from tests.e2e.play import auth, play_to_end, started_match
from tests.e2e.test_private_tables import assert_problem, create_private_table

pytestmark = [pytest.mark.e2e, pytest.mark.shares_stack]


def test_a_stacked_deck_is_committed_to_and_opened_once_the_match_is_over(stack: Stack) -> None:
    deck = list(reversed(standard_deck(5, False)))
    created = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"deck": deck}}
    ).json()
    shuffled = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    assert created["secret_options_set"] == ["deck"] and shuffled["secret_options_set"] == []
    commitment = created["commitments"]["deck"]
    assert len(commitment) == 64 and shuffled["commitments"] == {}
    url = f"/tables/{created['table_id']}"
    shown = stack.lobby.get(url)
    assert shown.json()["commitments"] == {"deck": commitment}
    assert shown.json()["options"]["deck"] is None and json.dumps(deck) not in shown.text

    tokens = [
        stack.lobby.post(f"{url}/seats", json={"name": name}).json()["token"]
        for name in ("ada", "bob")
    ]
    match = started_match(stack, stack.lobby.post(f"{url}/start", headers=auth(tokens[0])))
    running = stack.match.get(f"/matches/{match['match_id']}/export?format=playtable")
    assert running.status_code == 409  # nothing is revealed while it runs
    play_to_end(stack, match["match_id"], tokens, random.Random(3))

    exported = stack.match.get(f"/matches/{match['match_id']}/export?format=playtable").json()
    opened = exported["commitments"]["deck"]
    assert opened["commitment"] == commitment and opened["value"] == deck
    assert commitment_of(opened["salt"], opened["value"]) == commitment
    assert commitment_of(opened["salt"], list(reversed(deck))) != commitment
    reimported = stack.match.post(
        "/matches/import", json={"document": exported}, headers={"Idempotency-Key": "x"}
    )
    assert reimported.status_code == 201, reimported.text


def test_a_rematch_of_a_stacked_table_deals_a_deck_of_its_own(stack: Stack) -> None:
    """The first match's full replay (public once it is over) shows its deck: a rematch dealing
    it again would show each player the hidden cards of their own hand. Bob's are predicted from
    the replay and compared with what Ada sees of them in the rematch."""
    deck = standard_deck(5, False)
    random.Random(31).shuffle(deck)
    created = stack.lobby.post(
        "/tables", json={"game": "hanabi", "seats": 2, "options": {"deck": deck}}
    ).json()
    url = f"/tables/{created['table_id']}"
    tokens = [
        stack.lobby.post(f"{url}/seats", json={"name": name}).json()["token"]
        for name in ("ada", "bob")
    ]
    match = started_match(stack, stack.lobby.post(f"{url}/start", headers=auth(tokens[0])))
    left = stack.match.post(f"/matches/{match['match_id']}/leave", headers=auth(tokens[0]))
    assert left.status_code == 200 and left.json()["status"] == "finished", left.text
    replayed = stack.match.get(
        f"/matches/{match['match_id']}/replay",
        params={"version": left.json()["version"], "full": "true"},
    )
    assert replayed.status_code == 200, replayed.text
    played = replayed.json()["state"]["deck"]
    assert played == deck  # what anyone learns of the stacked deck once the match is over
    predicted = [(SUITS[code // 10], code % 10) for code in played[5:10]]  # bob's first hand

    seated = [stack.lobby.post(f"{url}/rematch", headers=auth(token)) for token in tokens]
    assert [answer.status_code for answer in seated] == [201, 201], seated[0].text
    rematch = seated[1].json()["table"]
    ada = seated[0].json()["token"]
    start = stack.lobby.post(f"/tables/{rematch['table_id']}/start", headers=auth(ada))
    again = started_match(stack, start)
    hands = stack.match.get(f"/matches/{again['match_id']}", headers=auth(ada)).json()["view"]
    dealt = [(card["suit"], card["rank"]) for card in hands["hands"][1]]
    guessed = sum(card == guess for card, guess in zip(dealt, predicted, strict=True))
    assert guessed < len(predicted), f"{guessed} of {len(predicted)} hidden cards predicted"
    assert rematch["secret_options_set"] == [] and rematch["commitments"] == {}


def test_a_rotated_or_revoked_invitation_lets_no_one_else_in(stack: Stack) -> None:
    table = create_private_table(stack, seats=3)
    url = f"/tables/{table['table_id']}"
    first = auth(table["invitation_token"])
    assert stack.lobby.post(f"{url}/seats", json={"name": "ada"}, headers=first).status_code == 201

    rotated = stack.lobby.post(f"{url}/invitation")
    assert rotated.status_code == 200, rotated.text
    second = auth(rotated.json()["invitation_token"])
    refused = stack.lobby.post(f"{url}/seats", json={"name": "eve"}, headers=first)
    assert_problem(refused, 403, "private-table")
    assert_problem(stack.lobby.get(url, headers=first), 403, "private-table")
    assert stack.lobby.post(f"{url}/seats", json={"name": "bob"}, headers=second).status_code == 201

    revoked = stack.lobby.delete(f"{url}/invitation")
    assert revoked.status_code == 200 and "invitation_token" not in revoked.json()
    refused = stack.lobby.post(f"{url}/seats", json={"name": "eve"}, headers=second)
    assert_problem(refused, 403, "private-table")
    seats = [seat["player"] for seat in revoked.json()["seats"]]
    assert seats == ["ada", "bob", None]

    public = stack.lobby.post("/tables", json={"game": "hanabi", "seats": 2}).json()
    assert_problem(stack.lobby.post(f"/tables/{public['table_id']}/invitation"), 422, "not-private")


def test_an_invitation_fills_no_more_seats_than_the_table_allows(stack: Stack) -> None:
    created = stack.lobby.post(
        "/tables",
        json={"game": "dingo", "seats": 3, "visibility": "private", "seats_per_invitation": 1},
    )
    assert created.status_code == 201, created.text
    url = f"/tables/{created.json()['table_id']}"
    invitation = auth(created.json()["invitation_token"])
    assert (
        stack.lobby.post(f"{url}/seats", json={"name": "ada"}, headers=invitation).status_code
        == 201
    )
    again = stack.lobby.post(f"{url}/seats", json={"name": "eve"}, headers=invitation)
    assert_problem(again, 409, "invitation-used-up")

    fresh = auth(stack.lobby.post(f"{url}/invitation").json()["invitation_token"])
    assert stack.lobby.post(f"{url}/seats", json={"name": "bob"}, headers=fresh).status_code == 201
    seated = [seat["player"] for seat in stack.lobby.get(url, headers=fresh).json()["seats"]]
    assert seated == ["ada", "bob", None]
    public = stack.lobby.post(
        "/tables", json={"game": "dingo", "seats": 3, "seats_per_invitation": 1}
    )
    assert_problem(public, 422, "not-private")
