"""Who may re-seat a running match's seat (``reseatPlayer``), each service its own process: the
app's secret key (any seat of its own match), or the seat's former holder with the token it had
once a bot holds the seat (after leaving or timing out). Everyone else is refused and changes
nothing: the seat's holder still plays and no one else reads their hand."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import new_app_key
from tests.e2e.conftest import Stack, running_stack
from tests.e2e.play import auth
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

NO_KEY = {"X-API-Key": ""}
"""Sent instead of the stack clients' (secret) app key: no key at all."""


@dataclass
class Keys:
    secret: dict[str, str]
    publishable: dict[str, str]
    other_app: dict[str, str]
    """Another app's secret key."""


@pytest.fixture(scope="module")
def stack(database_url: str, redis_url: str) -> Iterator[Stack]:
    """Lobby, match, rules and the clocks service (for seats that time out)."""
    with running_stack(database_url, redis_url) as running:
        running.start("clocks")
        yield running


@pytest.fixture(scope="module")
def keys(stack: Stack, database_url: str) -> Keys:
    return Keys(
        secret={"X-API-Key": stack.app_key},
        publishable={"X-API-Key": new_app_key(database_url, "browser", kind="publishable")},
        other_app={"X-API-Key": new_app_key(database_url, "other", app="another app")},
    )


@dataclass
class Seated:
    match_id: str
    tokens: list[str]
    invitation: str | None


def seated_match(
    stack: Stack,
    game: str = "hanabi",
    *,
    private: bool = False,
    hosting: dict[str, Any] | None = None,
) -> Seated:
    """A started 2-seat table (created with the app's secret key): its match, seat tokens and
    invitation."""
    body = {"game": game, "seats": 2, "visibility": "private" if private else "public"}
    created = stack.lobby.post("/tables", json={**body, "hosting": hosting or {}})
    assert created.status_code == 201, created.text
    table_id, invitation = created.json()["table_id"], created.json().get("invitation_token")
    tokens = []
    for seat in range(2):
        joined = stack.lobby.post(
            f"/tables/{table_id}/seats",
            json={"name": f"player{seat}"},
            headers=auth(invitation) if invitation else {},
        )
        assert joined.status_code == 201, joined.text
        tokens.append(joined.json()["token"])
    started = stack.lobby.post(f"/tables/{table_id}/start", headers=auth(tokens[0]))
    assert started.status_code == 201, started.text
    return Seated(started.json()["match_id"], tokens, invitation)


def reseat(stack: Stack, match_id: str, seat: int, headers: dict[str, str]) -> Any:
    return stack.match.post(f"/matches/{match_id}/seats/{seat}/token", json={}, headers=headers)


def event_types(stack: Stack, match_id: str, token: str) -> list[str]:
    page = stack.match.get(
        f"/matches/{match_id}/events", params={"limit": 500}, headers=auth(token)
    )
    assert page.status_code == 200, page.text
    return [event["type"] for event in page.json()["items"]]


def still_plays(stack: Stack, match: Seated, seat: int) -> None:
    """The seat's holder sees its own hand and its legal actions, as before."""
    token = match.tokens[seat]
    view = stack.match.get(f"/matches/{match.match_id}", headers=auth(token))
    assert view.status_code == 200, view.text
    assert view.json()["you"] == seat and view.json()["view"] is not None
    assert stack.match.get(f"/matches/{match.match_id}/actions", headers=auth(token)).is_success


REFUSED = frozenset({403})
NOT_ITS_MATCH = frozenset({403, 404})
"""Another app's key: refused, or told there is no such match (as another app's tables are)."""


def refused(
    stack: Stack,
    match: Seated,
    seat: int,
    headers: dict[str, str],
    statuses: frozenset[int] = REFUSED,
) -> str:
    """A refused re-seat: the status, no token in the answer, nothing recorded, the seat's
    holder still playing. Returns the problem's type."""
    before = event_types(stack, match.match_id, match.tokens[0])
    answer = reseat(stack, match.match_id, seat, headers)
    assert answer.status_code in statuses, (headers, answer.text)
    assert "token" not in answer.json()
    assert event_types(stack, match.match_id, match.tokens[0]) == before
    if seat not in taken_by_bots(stack, match):
        still_plays(stack, match, seat)
    return str(answer.json()["type"]).rpartition("/")[2]


def taken_by_bots(stack: Stack, match: Seated) -> set[int]:
    """The seats bots hold, as a spectator sees (a private match's: with its invitation)."""
    watching = auth(match.invitation) if match.invitation else {}
    info = stack.match.get(f"/matches/{match.match_id}", headers=watching).json()
    return {int(seat) for seat in info["bots"]}


def wait_for_bot(stack: Stack, match: Seated, seat: int) -> None:
    wait_until(lambda: seat in taken_by_bots(stack, match), what=f"a bot taking seat {seat}")


def test_a_private_tables_invitation_takes_no_seat(stack: Stack) -> None:
    """The issue's first case: an invited player re-seated seat 0 and read its hand."""
    match = seated_match(stack, "dingo", private=True)
    assert match.invitation is not None
    answer = reseat(stack, match.match_id, 0, {**NO_KEY, **auth(match.invitation)})
    assert answer.status_code == 403, answer.text
    spectator = stack.match.get(f"/matches/{match.match_id}", headers=auth(match.invitation))
    assert spectator.json()["you"] is None and spectator.json()["view"]["hand"] is None
    still_plays(stack, match, 0)


def test_a_publishable_key_takes_no_seat(stack: Stack, keys: Keys) -> None:
    """The issue's second case: a browser's app key re-seated a player out of their seat."""
    match = seated_match(stack)
    answer = reseat(stack, match.match_id, 0, keys.publishable)
    assert answer.status_code == 403, answer.text
    still_plays(stack, match, 0)


def test_no_one_else_takes_a_seat_someone_holds(stack: Stack, keys: Keys) -> None:
    match = seated_match(stack, "dingo", private=True)
    assert match.invitation is not None
    invitation = auth(match.invitation)
    callers = {
        "no credential": (NO_KEY, frozenset({401})),
        "the invitation": ({**NO_KEY, **invitation}, REFUSED),
        "the invitation with the publishable key": ({**keys.publishable, **invitation}, REFUSED),
        "the publishable key": (keys.publishable, REFUSED),
        "another seat's token": ({**NO_KEY, **auth(match.tokens[1])}, REFUSED),
        "another seat's token with the publishable key": (
            {**keys.publishable, **auth(match.tokens[1])},
            REFUSED,
        ),
        "the seat's own token": ({**NO_KEY, **auth(match.tokens[0])}, REFUSED),
        "another app's secret key": (keys.other_app, NOT_ITS_MATCH),
        "another app's key with a seat's token": (
            {**keys.other_app, **auth(match.tokens[1])},
            NOT_ITS_MATCH,
        ),
    }
    problems = {
        name: refused(stack, match, 0, headers, statuses)
        for name, (headers, statuses) in callers.items()
    }
    assert problems["the publishable key"] == "secret-key-required"
    assert problems["another seat's token"] == "not-your-seat"
    assert problems["no credential"] == "api-key-required"


def test_the_apps_secret_key_reseats_a_player_who_lost_their_token(
    stack: Stack, keys: Keys
) -> None:
    match = seated_match(stack, "dingo", private=True)
    assert reseat(stack, match.match_id, 5, keys.secret).status_code == 422  # no such seat
    answer = reseat(stack, match.match_id, 1, keys.secret)
    assert answer.status_code == 201, answer.text
    assert answer.json()["match"]["you"] == 1
    lost = stack.match.get(f"/matches/{match.match_id}", headers=auth(match.tokens[1]))
    assert lost.status_code == 403
    match.tokens[1] = answer.json()["token"]
    still_plays(stack, match, 1)
    still_plays(stack, match, 0)


def test_a_player_who_left_takes_their_seat_back_from_the_bot(stack: Stack, keys: Keys) -> None:
    match = seated_match(stack, hosting={"on_leave": "bot", "bot": "hanabi-random"})
    left = stack.match.post(f"/matches/{match.match_id}/leave", headers=auth(match.tokens[1]))
    assert left.status_code == 200, left.text
    former = auth(match.tokens[1])
    # vacated, the seat is still no one else's: nor is another seat the former holder's
    refused(stack, match, 1, {**NO_KEY, **auth(match.tokens[0])})
    refused(stack, match, 1, keys.publishable)
    refused(stack, match, 0, {**keys.publishable, **former})
    refused(stack, match, 1, {**keys.other_app, **former}, NOT_ITS_MATCH)
    back = reseat(stack, match.match_id, 1, {**keys.publishable, **former, "Idempotency-Key": "k"})
    assert back.status_code == 201, back.text
    assert back.json()["match"]["bots"] == {} and back.json()["match"]["you"] == 1
    assert event_types(stack, match.match_id, match.tokens[0])[-3:] == [
        "PlayerLeft",
        "BotTookOver",
        "PlayerReseated",
    ]
    # the answer once more under its Idempotency-Key; without it, the old token is spent
    again = reseat(stack, match.match_id, 1, {**keys.publishable, **former, "Idempotency-Key": "k"})
    assert again.status_code == 201 and again.json() == back.json()
    match.tokens[1] = back.json()["token"]
    refused(stack, match, 1, {**keys.publishable, **former})  # the holder's still plays
    still_plays(stack, match, 1)


def test_a_player_who_timed_out_takes_their_seat_back_with_their_token_alone(
    stack: Stack,
) -> None:
    match = seated_match(stack, hosting={"clock": {"per_move_s": 1}, "on_timeout": "bot"})
    info = stack.match.get(f"/matches/{match.match_id}", headers=auth(match.tokens[0])).json()
    late = info["to_move"][0]
    wait_for_bot(stack, match, late)
    back = reseat(stack, match.match_id, late, {**NO_KEY, **auth(match.tokens[late])})
    assert back.status_code == 201, back.text
    # (its clock runs again: the answer, not a later read, shows the seat back)
    assert back.json()["match"]["bots"] == {} and back.json()["match"]["you"] == late
    types = event_types(stack, match.match_id, match.tokens[1 - late])
    assert types.index("PlayerReseated") > types.index("BotTookOver")
