"""Starts and rematches of a hosted table, against the real Postgres and Redis: a retried start
gets the first answer, players take their seats again in one rematch, with the bots and the
privacy kept."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.lobby import lobby as lobby_module
from shared.edge.idempotency import remember
from shared.edge.tokens import hash_token
from tests.integration.lobby_hosting.lobby_client import HOSTING, Lobby, auth, hosting
from tests.waiting import await_until

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def played(lobby: Lobby, **body: Any) -> tuple[dict[str, Any], list[str]]:
    """A two-seat hanabi table (``body`` added) whose players ada and bob started it; return
    the started table and their tokens."""
    table_id, tokens = await seated(lobby, **body)
    return await lobby.start(table_id, tokens[0]), tokens


async def seated(lobby: Lobby, **body: Any) -> tuple[str, list[str]]:
    """A full two-seat hanabi table (``body`` added), ada and bob seated (unless bots are):
    its id and their tokens."""
    created = await lobby.create(game="hanabi", seats=2, **body)
    table_id = created["table_id"]
    invitation = created["invitation_token"]
    people = ["ada", "bob"][: 2 - len(body.get("bots", []))]
    tokens = []
    for name in people:
        joined = await lobby.client.post(
            f"/tables/{table_id}/seats",
            json={"name": name},
            headers=auth(invitation) if invitation else {},
        )
        assert joined.status_code == 201, joined.text
        tokens.append(joined.json()["token"])
    return table_id, tokens


async def test_a_start_retried_while_the_first_is_in_flight_gets_the_first_answer(
    lobby: Lobby, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that gave up waiting for its start (Postgres paused) sends it again under the
    same Idempotency-Key before the first has committed: the retry waits for the first and
    gets its answer, replayed, not 409 table-started (the first's change, without its
    record yet)."""
    table_id, (ada, _bob) = await seated(lobby)
    recorded, commit = asyncio.Event(), asyncio.Event()

    async def remember_then_wait(*args: Any) -> None:
        await remember(*args)
        recorded.set()
        await commit.wait()  # the first's transaction stays open, its answer stored

    monkeypatch.setattr(lobby_module, "remember", remember_then_wait)
    headers = {**auth(ada), "Idempotency-Key": "start-once"}
    path = f"/tables/{table_id}/start"
    first = asyncio.create_task(lobby.client.post(path, headers=headers))
    await asyncio.wait_for(recorded.wait(), 30)
    retry = asyncio.create_task(lobby.client.post(path, headers=headers))

    async def retry_waits() -> bool:
        blocked = await lobby.fetch(
            "select 1 from pg_stat_activity where datname = current_database()"
            " and wait_event_type = 'Lock' and state = 'active'"
        )
        return bool(blocked)

    await await_until(retry_waits, what="the retry waiting for the first's transaction")
    commit.set()
    answers = [await first, await retry]
    assert [answer.status_code in (201, 202) for answer in answers] == [True, True], [
        answer.text for answer in answers
    ]
    assert answers[0].json()["match_id"] == answers[1].json()["match_id"]
    assert "Idempotent-Replayed" not in answers[0].headers
    assert answers[1].headers["Idempotent-Replayed"] == "true"


async def test_players_take_their_seats_again_in_the_rematch(lobby: Lobby) -> None:
    table, (ada, bob) = await played(lobby, hosting=HOSTING, name="friday")
    old = table["table_id"]

    early = await lobby.rematch(old, ada)
    assert early.status_code == 409 and early.json()["type"].endswith("/match-running")
    await lobby.finish(table["match_id"], "running")
    running = await lobby.rematch(old, bob)
    assert running.status_code == 409 and running.json()["type"].endswith("/match-running")
    stranger = await lobby.rematch(old, "not-a-token")
    assert stranger.status_code == 403 and stranger.json()["type"].endswith("/not-seated")
    assert (await lobby.table(old))["rematch_table_id"] is None

    await lobby.finish(table["match_id"])
    first = await lobby.rematch(old, bob, key="bob-rematch")
    assert first.status_code == 201, first.text
    joined = first.json()
    rematch = joined["table"]
    new = rematch["table_id"]
    assert joined["seat"] == 1 and joined["token"] not in (ada, bob)
    assert rematch["rematch_of"] == old and rematch["rematch_table_id"] is None
    assert rematch["name"] == "friday" and rematch["game"] == "hanabi"
    assert hosting(rematch["hosting"]) == hosting(HOSTING) and rematch["status"] == "open"
    assert rematch["seats"] == [
        {"seat": 0, "player": None, "bot": None},
        {"seat": 1, "player": "bob", "bot": None},
    ]
    assert rematch == await lobby.table(new)
    assert (await lobby.table(old))["rematch_table_id"] == new

    repeated = await lobby.rematch(old, bob, key="bob-rematch")
    assert repeated.status_code == 201 and repeated.json() == joined
    twice = await lobby.rematch(old, bob)
    assert twice.status_code == 409 and twice.json()["type"].endswith("/seat-taken")

    second = await lobby.rematch(old, ada)
    assert second.status_code == 201, second.text
    assert second.json()["seat"] == 0 and second.json()["table"]["table_id"] == new
    assert [seat["player"] for seat in second.json()["table"]["seats"]] == ["ada", "bob"]

    old_events = await lobby.events(old)
    assert old_events[-1] == ("RematchOffered", {"type": "RematchOffered", "rematch_table_id": new})
    new_events = await lobby.events(new)
    assert [kind for kind, _ in new_events] == ["TableCreated", "SeatTaken", "SeatTaken"]
    assert new_events[0][1]["rematch_of"] == old
    assert hosting(new_events[0][1]["hosting"]) == hosting(HOSTING)

    stored = await lobby.fetch(
        "select options, seeded from lobby_tables where table_id = any(%s) order by rematch_of",
        [old, new],
    )
    (new_options, new_seeded), (old_options, _) = stored  # nulls (the old table's) last
    assert bytes(new_options) == bytes(old_options) and new_seeded is False

    started = await lobby.start(new, second.json()["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.players == ["ada", "bob"] and create.hosting == hosting(HOSTING)
    assert create.seat_token_hashes == [
        hash_token(second.json()["token"]),
        hash_token(joined["token"]),
    ]
    gone = await lobby.rematch(old, ada)
    assert gone.status_code == 409 and gone.json()["type"].endswith("/table-started")


async def test_a_rematch_closed_unplayed_gives_way_to_a_new_one(lobby: Lobby) -> None:
    table, (ada, bob) = await played(lobby)
    old = table["table_id"]
    await lobby.finish(table["match_id"])
    first = await lobby.rematch(old, ada)
    assert first.status_code == 201, first.text
    closed_id = first.json()["table"]["table_id"]
    closed = await lobby.client.delete(f"/tables/{closed_id}")
    assert closed.status_code == 200 and closed.json()["status"] == "closed", closed.text

    again = await lobby.rematch(old, bob)
    assert again.status_code == 201, again.text
    reopened = again.json()["table"]
    assert reopened["table_id"] != closed_id and reopened["status"] == "open"
    assert reopened["rematch_of"] == old
    assert (await lobby.table(old))["rematch_table_id"] == reopened["table_id"]
    back = await lobby.rematch(old, ada)
    assert back.status_code == 201 and back.json()["table"]["table_id"] == reopened["table_id"]
    offers = [data for kind, data in await lobby.events(old) if kind == "RematchOffered"]
    assert [offer["rematch_table_id"] for offer in offers] == [closed_id, reopened["table_id"]]


async def test_players_asking_at_once_open_one_rematch(lobby: Lobby) -> None:
    for _ in range(3):
        table, (ada, bob) = await played(lobby)
        await lobby.finish(table["match_id"])
        answers = await asyncio.gather(
            lobby.rematch(table["table_id"], ada), lobby.rematch(table["table_id"], bob)
        )
        assert [answer.status_code for answer in answers] == [201, 201], answers[0].text
        new = {answer.json()["table"]["table_id"] for answer in answers}
        assert len(new) == 1
        rematches = await lobby.fetch(
            "select table_id from lobby_tables where rematch_of = %s", table["table_id"]
        )
        assert [row[0] for row in rematches] == list(new)
        offered = [kind for kind, _ in await lobby.events(table["table_id"])]
        assert offered.count("RematchOffered") == 1
        assert sorted(answer.json()["seat"] for answer in answers) == [0, 1]
        seats = (await lobby.table(new.pop()))["seats"]
        assert [seat["player"] for seat in seats] == ["ada", "bob"]


async def test_the_rematch_keeps_the_bots_and_the_privacy(lobby: Lobby) -> None:
    bots = [{"bot": "hanabi-heuristic", "seat": 1}]
    table, (ada,) = await played(lobby, bots=bots, visibility="private")
    await lobby.finish(table["match_id"])
    joined = await lobby.rematch(table["table_id"], ada)
    assert joined.status_code == 201, joined.text
    rematch = joined.json()["table"]
    assert rematch["visibility"] == "private"
    assert rematch["seats"] == [
        {"seat": 0, "player": "ada", "bot": None},
        {"seat": 1, "player": "hanabi-heuristic", "bot": "hanabi-heuristic"},
    ]
    assert rematch == await lobby.table(rematch["table_id"], joined.json()["token"])
    hidden = await lobby.client.get(f"/tables/{rematch['table_id']}")
    assert hidden.status_code == 403
    started = await lobby.start(rematch["table_id"], joined.json()["token"])
    create = await lobby.create_match(started["match_id"])
    assert create.bots == {1: "hanabi-heuristic"} and create.private


async def test_a_player_seated_again_in_the_match_asks_with_the_matchs_token(
    lobby: Lobby,
) -> None:
    """A player the match gave a new token (``PlayerReseated``) asks with it: the lobby finds
    their seat in the match's seats."""
    table, (ada, _bob) = await played(lobby)
    await lobby.finish(table["match_id"])
    reseated = "a-token-the-match-gave-bob"
    async with lobby.pool.connection() as conn:
        await conn.execute(
            "insert into match_seats (match_id, seat, token_hash) values (%s, 0, %s), (%s, 1, %s)",
            (table["match_id"], hash_token(ada), table["match_id"], hash_token(reseated)),
        )
    joined = await lobby.rematch(table["table_id"], reseated)
    assert joined.status_code == 201, joined.text
    assert joined.json()["seat"] == 1
    assert joined.json()["table"]["seats"][1]["player"] == "bob"
