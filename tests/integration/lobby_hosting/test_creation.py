"""Tables created with bots and a hosting policy, against the real Postgres and Redis: the
catalogue lists each game's bots, bad bots or hosting create nothing."""

from __future__ import annotations

import uuid

import msgspec
import pytest

from shared.domain.hosting import BOTS, Hosting
from shared.edge.tokens import hash_token
from tests.integration.lobby_hosting.lobby_client import HOSTING, Lobby, hosting

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


# --- the catalogue ------------------------------------------------------------------------------


async def test_the_catalogue_lists_each_games_bots(lobby: Lobby) -> None:
    games = {game["name"]: game for game in (await lobby.client.get("/games")).json()}
    for name, bots in BOTS.items():
        assert games[name]["bots"] == [msgspec.to_builtins(bot) for bot in bots]
    one = (await lobby.client.get("/games/dingo")).json()
    assert [bot["name"] for bot in one["bots"]] == ["dingo-random", "dingo-heuristic"]


# --- creation -----------------------------------------------------------------------------------


async def test_a_table_is_created_with_its_bots_and_hosting(lobby: Lobby) -> None:
    bots = [{"bot": "hanabi-heuristic", "seat": 2}, {"bot": "hanabi-random"}]
    created = await lobby.create(game="hanabi", seats=3, hosting=HOSTING, bots=bots)
    table_id = created["table_id"]
    assert hosting(created["hosting"]) == hosting(HOSTING)
    assert created["rematch_of"] is None and created["rematch_table_id"] is None
    assert created["seats"] == [
        {"seat": 0, "player": "hanabi-random", "bot": "hanabi-random"},
        {"seat": 1, "player": None, "bot": None},
        {"seat": 2, "player": "hanabi-heuristic", "bot": "hanabi-heuristic"},
    ]
    assert created["status"] == "open" and created["version"] == 3
    created.pop("invitation_token")
    assert await lobby.table(table_id) == created

    events = await lobby.events(table_id)
    assert [kind for kind, _ in events] == ["TableCreated", "SeatTaken", "SeatTaken"]
    assert hosting(events[0][1]["hosting"]) == hosting(HOSTING)
    assert events[0][1]["rematch_of"] is None
    assert events[1][1] == {
        "type": "SeatTaken",
        "seat": 0,
        "player": "hanabi-random",
        "bot": "hanabi-random",
    }
    seats = await lobby.fetch(
        "select seat, player_name, bot, token_hash from lobby_seats where table_id = %s"
        " order by seat",
        table_id,
    )
    assert [(seat, name, bot) for seat, name, bot, _ in seats] == [
        (0, "hanabi-random", "hanabi-random"),
        (2, "hanabi-heuristic", "hanabi-heuristic"),
    ]
    assert len({hashed for *_, hashed in seats}) == 2 and all(hashed for *_, hashed in seats)
    stored = await lobby.fetch("select hosting from lobby_tables where table_id = %s", table_id)
    assert msgspec.json.decode(stored[0][0], type=Hosting) == hosting(HOSTING)

    ada = await lobby.join(table_id, "ada")
    assert ada["seat"] == 1 and ada["table"]["seats"][1] == {
        "seat": 1,
        "player": "ada",
        "bot": None,
    }
    started = await lobby.start(table_id, ada["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {0: "hanabi-random", 2: "hanabi-heuristic"}
    assert create.hosting == hosting(HOSTING)
    assert create.players == ["hanabi-random", "ada", "hanabi-heuristic"]
    assert create.seat_token_hashes == [seats[0][3], hash_token(ada["token"]), seats[1][3]]


async def test_a_table_without_hosting_or_bots_is_as_before(lobby: Lobby) -> None:
    created = await lobby.create(game="dingo", seats=2)
    assert hosting(created["hosting"]) == Hosting() and created["version"] == 1
    events = await lobby.events(created["table_id"])
    assert events == [("TableCreated", events[0][1])]
    assert hosting(events[0][1]["hosting"]) == Hosting()
    ada = await lobby.join(created["table_id"], "ada")
    bob = await lobby.join(created["table_id"], "bob")
    assert "bot" not in (await lobby.events(created["table_id"]))[-1][1]  # omitted when None
    started = await lobby.start(created["table_id"], bob["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {} and create.hosting == Hosting()
    assert create.seat_token_hashes == [hash_token(ada["token"]), hash_token(bob["token"])]


BAD_CREATIONS = [
    ({"bots": [{"bot": "chess-engine"}]}, 400, "invalid-request"),  # no game's bot
    ({"bots": [{"bot": "dingo-random"}]}, 422, "unknown-bot"),  # another game's
    ({"hosting": {"bot": "dingo-heuristic"}}, 422, "unknown-bot"),
    ({"bots": [{"bot": "hanabi-random", "seat": 3}]}, 422, "no-such-seat"),
    (
        {"bots": [{"bot": "hanabi-random", "seat": 1}, {"bot": "hanabi-heuristic", "seat": 1}]},
        422,
        "bad-bots",
    ),
    ({"bots": [{"bot": "hanabi-random"}] * 4}, 422, "bad-bots"),
    ({"hosting": {"clock": {}}}, 422, "bad-hosting"),
    ({"hosting": {"clock": {"per_move_s": 30, "bank_s": 300}}}, 422, "bad-hosting"),
    ({"hosting": {"clock": {"per_move_s": 30, "increment_s": 2}}}, 422, "bad-hosting"),
    ({"hosting": {"on_timeout": "nap"}}, 400, "invalid-request"),
    ({"hosting": {"on_timeout": "pass"}}, 422, "bad-hosting"),  # Hanabi has no pass
    ({"hosting": {"clock": {"per_move_s": 0}}}, 400, "invalid-request"),
    ({"hosting": {"referee": "me"}}, 400, "invalid-request"),
    ({"bots": [{"bot": "hanabi-random", "seat": -1}]}, 400, "invalid-request"),
]


async def test_bad_bots_or_hosting_create_nothing(lobby: Lobby) -> None:
    """(One test, not one per case: each lobby takes seconds to stop.)"""
    count = "select (select count(*) from lobby_tables), (select count(*) from lobby_seats)"
    before = await lobby.fetch(count)
    for body, status, code in BAD_CREATIONS:
        refused = await lobby.client.post(
            "/tables",
            json={"game": "hanabi", "seats": 3, **body},
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )
        assert refused.status_code == status, (body, refused.text)
        assert refused.json()["type"].endswith(f"/{code}"), (body, refused.text)
    assert await lobby.fetch(count) == before


async def test_good_hosting_policies_are_taken(lobby: Lobby) -> None:
    for asked in (
        {"clock": {"per_move_s": 20}, "on_timeout": "pass"},
        {"on_timeout": "bot", "on_leave": "bot"},
        {"clock": {"bank_s": 60}, "on_timeout": "forfeit", "on_leave": "abandon"},
    ):
        created = await lobby.create(game="breaking_news", seats=3, hosting=asked)
        assert hosting(created["hosting"]) == hosting(asked)
        created.pop("invitation_token")
        assert await lobby.table(created["table_id"]) == created
