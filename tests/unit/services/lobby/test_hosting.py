"""Where a new table's bots sit, and which bots and hosting a table may ask for (the lobby's
checks before it writes anything)."""

from __future__ import annotations

import msgspec
import pytest

from services.lobby.checks import bot_seats
from services.lobby.rows import TableRow
from services.lobby.schemas import BotSeat
from shared.domain.hosting import NO_HOSTING, Hosting, TimeControl
from shared.edge.errors import Problem


def test_bots_without_a_seat_take_the_first_free_ones_in_order() -> None:
    bots = [
        BotSeat("dingo-random"),
        BotSeat("dingo-heuristic", seat=0),
        BotSeat("dingo-heuristic"),
        BotSeat("dingo-random", seat=2),
    ]
    assert bot_seats("dingo", 5, bots, NO_HOSTING) == {
        0: "dingo-heuristic",
        1: "dingo-random",
        2: "dingo-random",
        3: "dingo-heuristic",
    }
    assert bot_seats("dingo", 2, [], NO_HOSTING) == {}


@pytest.mark.parametrize(
    ("bots", "hosting", "code"),
    [
        ([BotSeat("carcassonne-random")], NO_HOSTING, "unknown-bot"),
        ([], Hosting(bot="hanabi-random"), "unknown-bot"),
        ([BotSeat("dingo-random", seat=2)], NO_HOSTING, "no-such-seat"),
        (
            [BotSeat("dingo-random", seat=1), BotSeat("dingo-random", seat=1)],
            NO_HOSTING,
            "bad-bots",
        ),
        ([BotSeat("dingo-random")] * 3, NO_HOSTING, "bad-bots"),
        ([], Hosting(clock=TimeControl()), "bad-hosting"),
        ([], Hosting(clock=TimeControl(per_move_s=10, bank_s=60)), "bad-hosting"),
        ([], Hosting(clock=TimeControl(per_move_s=10, increment_s=1)), "bad-hosting"),
    ],
)
def test_bots_and_hosting_not_for_the_table_are_422(
    bots: list[BotSeat], hosting: Hosting, code: str
) -> None:
    with pytest.raises(Problem) as refused:
        bot_seats("dingo", 2, bots, hosting)
    assert refused.value.status == 422 and refused.value.code == code


def test_every_policy_and_the_games_bots_are_taken() -> None:
    hosting = Hosting(
        clock=TimeControl(bank_s=120, increment_s=3),
        on_timeout="bot",
        on_leave="bot",
        bot="dingo-heuristic",
    )
    assert bot_seats("dingo", 2, [BotSeat("dingo-random")], hosting) == {0: "dingo-random"}


def stored_table(game: str, hosting: Hosting) -> TableRow:
    """A ``lobby_tables`` row of ``game`` as stored with ``hosting``."""
    return TableRow(
        table_id="t1",
        game=game,
        name="old table",
        seats=2,
        options=b"{}",
        seed=1,
        seeded=False,
        status="open",
        match_id=None,
        version=1,
        visibility="public",
        invitation_token_hash=None,
        app_id=None,
        commitments=b"{}",
        seats_per_invitation=None,
        hosting=msgspec.json.encode(hosting),
        rematch_of=None,
        rematch_table_id=None,
    )


@pytest.mark.parametrize("game", ["hanabi", "carcassonne", "dingo"])
def test_a_stored_pass_without_a_pass_in_the_rules_reads_as_the_forfeit_it_was(game: str) -> None:
    """A table stored before ``pass`` was refused for a game without one: its late seat always
    forfeited, so its page, its match and its rematch say ``forfeit``, the rest kept."""
    clock = TimeControl(per_move_s=30)
    stored = stored_table(game, Hosting(clock=clock, on_timeout="pass", on_leave="bot"))
    assert stored.hosted() == Hosting(clock=clock, on_timeout="forfeit", on_leave="bot")


def test_a_stored_pass_in_a_game_with_one_stays_a_pass() -> None:
    hosting = Hosting(clock=TimeControl(per_move_s=30), on_timeout="pass")
    assert stored_table("breaking_news", hosting).hosted() == hosting
    assert stored_table("dingo", NO_HOSTING).hosted() == NO_HOSTING
