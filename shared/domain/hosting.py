"""Hosted play: a table's time control and policies, the clocks' arithmetic, the bots on offer,
and the events a match records about its seats (beside its game's events).

The match service records these events in the match's own log, so replays, feeds and webhooks
show who left, who timed out and what the clocks read; the rules service skips them when it
folds a match. Every one is public: none carries a token or a hand.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Annotated, Any, Literal

import msgspec
from psycopg import AsyncConnection

from shared.infra.sealed import HOSTING_SECRET, seal_rows
from shared.infra.secretbox import Keyring

# --- what a table asks for ---------------------------------------------------------------------

Seconds = Annotated[int, msgspec.Meta(ge=1, le=86_400)]


class TimeControl(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A clock for every seat: a limit per move (``per_move_s``), or a bank for the whole game
    with an increment after each move (Fischer: ``bank_s`` and ``increment_s``). Exactly one of
    ``per_move_s`` and ``bank_s``."""

    per_move_s: Seconds | None = None
    bank_s: Seconds | None = None
    increment_s: Annotated[int, msgspec.Meta(ge=0, le=3600)] = 0

    def problem(self) -> str | None:
        """What makes it no time control, if anything."""
        if (self.per_move_s is None) == (self.bank_s is None):
            return "set exactly one of per_move_s (a limit per move) and bank_s (a game bank)"
        if self.per_move_s is not None and self.increment_s:
            return "increment_s goes with bank_s (Fischer), not with per_move_s"
        return None


TIME_CONTROL_SHAPES: list[dict[str, Any]] = [
    {
        "title": "PerMoveClock",
        "type": "object",
        "required": ["per_move_s"],
        "properties": {
            "per_move_s": {"type": "integer"},
            "bank_s": {"type": "null"},
            # 0 as a range, not a const: openapi-python-client writes a numeric const's check
            # as "!= 0and", which Python warns of (and will refuse) in the generated client
            "increment_s": {"type": "integer", "minimum": 0, "maximum": 0},
        },
    },
    {
        "title": "FischerClock",
        "type": "object",
        "required": ["bank_s"],
        "properties": {"bank_s": {"type": "integer"}, "per_move_s": {"type": "null"}},
    },
]
"""What ``TimeControl.problem`` asks, as JSON Schema (the contract's ``oneOf`` of the
schema): a client's generator and a fuzzer see which time controls are ones."""


TimeoutPolicy = Literal["bot", "pass", "forfeit"]
LeavePolicy = Literal["bot", "abandon"]


class Hosting(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How a table's match goes on when a player is slow or gone."""

    clock: TimeControl | None = None
    """None: no clock (a seat may take as long as it likes)."""
    on_timeout: TimeoutPolicy = "forfeit"
    """When a seat's time runs out: ``bot`` hands the seat to ``bot``; ``pass`` passes the turn
    (only for a game with a pass, Breaking News' ``PassTurn``: where no pass is legal at that
    moment, the seat forfeits); ``forfeit`` ends the match, lost by that seat (the result says
    so). The game's catalogue entry says what each does in that game."""
    on_leave: LeavePolicy = "abandon"
    """When a player leaves the running match: ``bot`` hands the seat to ``bot``;
    ``abandon`` ends it as abandoned by that seat."""
    bot: BotName | None = None
    """The bot that takes seats over; None: the game's heuristic bot."""

    def takeover_bot(self, game: str) -> str:
        return self.bot or f"{game}-heuristic"


NO_HOSTING = Hosting()


# --- what each policy does in each game ----------------------------------------------------------


class PolicyInfo(msgspec.Struct, frozen=True):
    """A hosting policy a game's tables may choose, and what it does in that game."""

    name: str
    description: str


PASS_ACTIONS: dict[str, str] = {"breaking_news": "PassTurn"}
"""The action that passes a turn, for the games whose rules have one: ``on_timeout: pass``
plays it; a game not here has no pass, so its tables cannot choose that policy."""

_PASS_WHEN: dict[str, str] = {
    "breaking_news": (
        "When the seat's time runs out while it is to place a card, it passes (PassTurn: its"
        " hand goes under the element deck and it draws three new cards) and the next seat"
        " plays. When no pass is legal at that moment (the seat was completing news or ending"
        " its turn, telling a story or voting), the seat forfeits instead: the match ends, lost"
        " by that seat."
    ),
}
"""What ``pass`` does in each game that has one, said plainly (a catalogue entry shows it)."""

_FORFEIT = "When the seat's time runs out, the match ends, lost by that seat (the others win)."
_FORFEIT_TOGETHER = (
    "When a seat's time runs out, the match ends: the seats play together, so all of them lose."
)
_TIMEOUT_BOT = (
    "When the seat's time runs out, a bot (the table's, else the game's heuristic bot) plays"
    " the seat from then on; its player may take it back."
)
_LEAVE_BOT = (
    "When a player leaves the running match, a bot (the table's, else the game's heuristic"
    " bot) plays the seat from then on."
)
_ABANDON = (
    "When a player leaves the running match, it ends as abandoned by that seat (the others win)."
)
_ABANDON_TOGETHER = (
    "When a player leaves the running match, it ends as abandoned by that seat: the seats play"
    " together, so all of them lose."
)


def timeout_policies(game: str, *, cooperative: bool) -> list[PolicyInfo]:
    """The ``on_timeout`` policies ``game``'s tables may choose, each as it acts in that game
    (``pass`` only where the rules have a pass)."""
    policies = [
        PolicyInfo("forfeit", _FORFEIT_TOGETHER if cooperative else _FORFEIT),
        PolicyInfo("bot", _TIMEOUT_BOT),
    ]
    if game in _PASS_WHEN:
        policies.append(PolicyInfo("pass", _PASS_WHEN[game]))
    return policies


def leave_policies(*, cooperative: bool) -> list[PolicyInfo]:
    """The ``on_leave`` policies (every game's tables may choose each), as each acts in a game
    whose seats win together (``cooperative``) or not."""
    abandon = _ABANDON_TOGETHER if cooperative else _ABANDON
    return [PolicyInfo("abandon", abandon), PolicyInfo("bot", _LEAVE_BOT)]


def timeout_problem(game: str, hosting: Hosting) -> str | None:
    """Why ``hosting``'s timeout policy is not one of ``game``'s, if it is not."""
    if hosting.on_timeout == "pass" and game not in PASS_ACTIONS:
        return (
            f"on_timeout 'pass': {game} has no pass in its rules, so a late seat could only"
            " forfeit: choose 'forfeit' (say so) or 'bot' (a bot plays the seat)"
        )
    return None


def as_played(game: str, hosting: Hosting) -> Hosting:
    """``hosting`` named for what it does in ``game``: a table stored with ``on_timeout: pass``
    for a game without a pass (before ``timeout_problem`` refused one) always forfeited a late
    seat, so it reads, starts and is rematched as ``forfeit``."""
    if hosting.on_timeout == "pass" and game not in PASS_ACTIONS:
        return msgspec.structs.replace(hosting, on_timeout="forfeit")
    return hosting


# --- the bots on offer ---------------------------------------------------------------------------


class BotInfo(msgspec.Struct, frozen=True):
    name: str
    description: str


BOTS: dict[str, tuple[BotInfo, ...]] = {
    "hanabi": (
        BotInfo("hanabi-random", "Any legal action, uniformly."),
        BotInfo(
            "hanabi-heuristic",
            "A convention player: clues playable and critical cards, plays what it knows is"
            " playable, discards its chop.",
        ),
    ),
    "carcassonne": (
        BotInfo("carcassonne-random", "Any legal placement, follower and choice, uniformly."),
        BotInfo(
            "carcassonne-heuristic",
            "A greedy scorer: places the tile and follower that complete and grow its features"
            " most.",
        ),
    ),
    "dingo": (
        BotInfo("dingo-random", "Any legal action, uniformly."),
        BotInfo("dingo-heuristic", "Plays its cards to score the day and spoil the others'."),
    ),
    "breaking_news": (
        BotInfo("breaking_news-random", "Any legal action, uniformly (a story of random words)."),
        BotInfo(
            "breaking_news-heuristic",
            "Tells stories that use the three required words, and votes for the best told.",
        ),
    ),
}
"""Each game's bots, as the catalogue lists them (``services/bots/policies`` plays them)."""

BotName = Literal[tuple(bot.name for bots in BOTS.values() for bot in bots)]  # type: ignore[valid-type]
"""The name of a bot of some game (whether the table's game has it is the table's to say)."""


def bot_named(game: str, name: str) -> BotInfo | None:
    return next((bot for bot in BOTS.get(game, ()) if bot.name == name), None)


# --- bot credentials ----------------------------------------------------------------------------

_SECRET_SQL = """
insert into hosting_secrets (name, secret) values ('bots', %s) on conflict (name) do nothing;
"""


async def bot_secret(conn: AsyncConnection, configured: str, keyring: Keyring) -> bytes:
    """The key bot seats' tokens derive from: the configured one, else the deployment's own,
    made once in Postgres by whichever process asks first (so the match and bots services of
    one deployment agree without configuration) and stored sealed under the keyring; one
    stored before secrets were sealed is sealed now."""
    if configured:
        return configured.encode()
    made = secrets.token_hex(32).encode()
    await conn.execute(_SECRET_SQL, (keyring.seal(made, HOSTING_SECRET.context("bots")),))
    await seal_rows(conn, keyring, (HOSTING_SECRET,), rotate=False)
    found = await conn.execute("select secret from hosting_secrets where name = 'bots'")
    row = await found.fetchone()
    assert row is not None
    return keyring.open(row[0], HOSTING_SECRET.context("bots"))


def bot_token(secret: bytes, match_id: str, seat: int) -> str:
    """A bot seat's token: the bots service derives it, the match service stores its hash, so
    no bot's token is ever stored or sent anywhere."""
    return "bot_" + hmac.new(secret, f"{match_id}:{seat}".encode(), hashlib.sha256).hexdigest()


# --- clocks -------------------------------------------------------------------------------------


class Clocks(msgspec.Struct, frozen=True):
    """Every seat's clock in a match: what is left (a bank, or the move's limit), and since when
    it runs (None: stopped). Times are the server's wall clock in milliseconds."""

    remaining_ms: list[int]
    running_since_ms: list[int | None]


def start_clocks(
    control: TimeControl, seats: int, to_move: list[int], unclocked: set[int], now_ms: int
) -> Clocks:
    """Every seat's full allowance, running for the seats to move that are not bots'."""
    return Clocks(
        remaining_ms=[_allowance_ms(control)] * seats,
        running_since_ms=[
            now_ms if seat in to_move and seat not in unclocked else None for seat in range(seats)
        ],
    )


def _allowance_ms(control: TimeControl) -> int:
    return 1000 * (control.per_move_s if control.per_move_s is not None else control.bank_s or 0)


def run_clocks(
    control: TimeControl,
    clocks: Clocks,
    *,
    moved: int | None,
    to_move: list[int],
    unclocked: set[int],
    now_ms: int,
) -> Clocks:
    """The clocks after ``moved`` (None: no one) acted and ``to_move`` are to move, at ``now_ms``.

    A seat that moved, or is no longer to move, stops its clock: its bank is charged the time it
    ran (and credited the increment when it moved); a per-move clock starts afresh next time.
    A seat to move whose clock is stopped starts it; one still to move that did not act (a
    simultaneous phase) keeps running. Bot seats (``unclocked``) never run a clock."""
    remaining = list(clocks.remaining_ms)
    since = list(clocks.running_since_ms)
    for seat, started in enumerate(clocks.running_since_ms):
        if started is None or (seat != moved and seat in to_move and seat not in unclocked):
            continue
        if control.bank_s is not None:
            remaining[seat] -= now_ms - started
            if seat == moved:
                remaining[seat] += 1000 * control.increment_s
        since[seat] = None
    for seat in to_move:
        if since[seat] is None and seat not in unclocked:
            since[seat] = now_ms
    return Clocks(remaining, since)


def seat_deadlines(control: TimeControl, clocks: Clocks) -> dict[int, int]:
    """When each running clock runs out (ms)."""
    banked = control.bank_s is not None
    return {
        seat: started + (clocks.remaining_ms[seat] if banked else _allowance_ms(control))
        for seat, started in enumerate(clocks.running_since_ms)
        if started is not None
    }


def deadline_ms(control: TimeControl | None, clocks: Clocks | None) -> int | None:
    """When the first running clock runs out; None when none runs."""
    if control is None or clocks is None:
        return None
    deadlines = seat_deadlines(control, clocks)
    return min(deadlines.values()) if deadlines else None


class ClockView(msgspec.Struct, frozen=True):
    """The clocks as a client shows them: who is on the clock and the time each seat has left,
    as of ``server_time_ms`` (the server's clock: count down from it, not from your own)."""

    control: TimeControl
    on_clock: list[int]
    remaining_ms: list[int]
    """Each seat's time left now: its bank (Fischer) or what is left of this move's limit."""
    deadline_ms: int | None
    """When the first running clock runs out (ms since the epoch, server time)."""
    server_time_ms: int


def clock_view(control: TimeControl, clocks: Clocks, now_ms: int) -> ClockView:
    deadlines = seat_deadlines(control, clocks)
    remaining = [
        max(0, deadlines[seat] - now_ms) if seat in deadlines else clocks.remaining_ms[seat]
        for seat in range(len(clocks.remaining_ms))
    ]
    return ClockView(
        control=control,
        on_clock=sorted(deadlines),
        remaining_ms=remaining,
        deadline_ms=min(deadlines.values()) if deadlines else None,
        server_time_ms=now_ms,
    )


# --- the events a match records about its seats ------------------------------------------------


class ClockUpdated(msgspec.Struct, tag=True):
    """The clocks after a move, a timeout or a change of seat: who is on the clock and what each
    seat has left (recorded so a replay shows them)."""

    moved: int | None
    """The seat whose move stopped its clock, if any."""
    used_ms: int | None
    """How long that move took."""
    remaining_ms: list[int]
    on_clock: list[int]
    deadline_ms: int | None
    server_time_ms: int


class TurnTimedOut(msgspec.Struct, tag=True):
    """A seat's time ran out; the table's timeout policy follows."""

    seat: int
    policy: TimeoutPolicy
    deadline_ms: int
    """When its clock ran out (the event's own time says when the timeout fired)."""


class PlayerLeft(msgspec.Struct, tag=True):
    """A player left the running match; the table's leave policy follows."""

    seat: int
    player: str
    policy: LeavePolicy


class BotTookOver(msgspec.Struct, tag=True):
    """A bot plays the seat from now on (its player left or timed out)."""

    seat: int
    bot: str
    reason: Literal["left", "timeout"]


class PlayerReseated(msgspec.Struct, tag=True):
    """The seat has a new token (the one before no longer works), given by the table's app or
    through its invitation; a bot that held the seat gives it back."""

    seat: int
    player: str
    from_bot: str | None = None


class MatchForfeited(msgspec.Struct, tag=True):
    """The match ended early: a seat ran out of time or its player left (``result`` says who)."""

    seats: list[int]
    reason: Literal["timeout", "abandoned"]
    result: dict[str, Any]


HostingEvent = (
    ClockUpdated | TurnTimedOut | PlayerLeft | BotTookOver | PlayerReseated | MatchForfeited
)
"""What a match records about its seats and clocks, in its log beside the game's events."""

HOSTING_EVENTS = (
    ClockUpdated,
    TurnTimedOut,
    PlayerLeft,
    BotTookOver,
    PlayerReseated,
    MatchForfeited,
)
HOSTING_EVENT_TYPES = tuple(event.__name__ for event in HOSTING_EVENTS)

hosting_event_decoder = msgspec.json.Decoder(HostingEvent)


def forfeit_result(
    seats: int, forfeited: list[int], reason: str, *, cooperative: bool
) -> dict[str, Any]:
    """An ``Outcome`` for a match ended early: no scores; the seats that stayed win (in a
    cooperative game the team loses together), and ``forfeited`` names who lost it."""
    stayed = [seat for seat in range(seats) if seat not in forfeited]
    return {
        "scores": [0] * seats,
        "winners": [] if cooperative else stayed,
        "reason": "forfeit" if reason == "timeout" else "abandoned",
        "forfeited": sorted(forfeited),
    }
