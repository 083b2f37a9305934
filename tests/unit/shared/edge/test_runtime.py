"""The problems made of the rules service's refusals: a title that says what was refused, and
a ``type`` that stays the refusal's code."""

from __future__ import annotations

import asyncio
import socket

import msgspec
import pytest

from services.rules.engine import RulesEngine
from services.rules.games import load_games
from shared.domain import rules_api as api
from shared.edge.errors import PROBLEM_TYPE_BASE
from shared.edge.problems import RULES_REFUSAL
from shared.edge.runtime import Runtime, rejection_problem
from shared.infra.readiness import ReadyChecks
from shared.infra.settings import Settings

ENGINE = RulesEngine(load_games())


def refusal(request: api.RulesRequest) -> api.Rejected:
    refused = ENGINE.handle(request)
    assert isinstance(refused, api.Rejected), refused
    return refused


def hanabi_state() -> bytes:
    done = ENGINE.handle(api.SetUp(game="hanabi", options={}, seats=2, seed=1))
    assert isinstance(done, api.SetUpDone)
    return done.progress.state


REFUSALS_NO_RULE_DECIDES = {
    "bad-seat-count": (
        api.ResolveOptions(game="hanabi", options={}, seats=7),
        "Unsupported number of players",
    ),
    "unknown-option": (
        api.ResolveOptions(game="hanabi", options={"colours": 3}, seats=2),
        "Unknown table option",
    ),
    "bad-option": (
        api.ResolveOptions(game="hanabi", options={"suits": 4}, seats=2),
        "Invalid table option",
    ),
    "export-unsupported": (
        api.ExportMatch(game="dingo", events=[], players=[], format="hanab.live"),
        "Export format not supported",
    ),
    "import-unsupported": (
        api.ImportMatch(game="dingo", document=msgspec.Raw(b'{"actions": []}')),
        "Import format not supported",
    ),
    "invalid-document": (
        api.ImportMatch(game="hanabi", document=msgspec.Raw(b"[")),
        "Invalid match document",
    ),
}


@pytest.mark.parametrize("code", REFUSALS_NO_RULE_DECIDES)
def test_refusals_no_rule_of_play_decides_say_what_they_are(code: str) -> None:
    request, title = REFUSALS_NO_RULE_DECIDES[code]
    problem = rejection_problem(refusal(request))
    document = problem.document()
    assert (document.status, document.type, document.title) == (
        422,
        PROBLEM_TYPE_BASE + code,
        title,
    )
    assert document.detail


@pytest.mark.parametrize(
    ("action", "key"),
    [
        (b'{"type": "PlayCard", "card": 0, "extra": 1}', "action.extra"),
        (b'{"type": "PlayCard", "card": "0"}', "action.card"),
        (b'{"type": "Fly"}', "action.type"),
        (b"{}", "action"),
    ],
)
def test_an_action_not_of_its_games_schema_is_a_400_naming_the_field(
    action: bytes, key: str
) -> None:
    garbage = api.Decide(game="hanabi", state=hanabi_state(), seat=0, action=msgspec.Raw(action))
    problem = rejection_problem(refusal(garbage))
    assert (problem.status, problem.code) == (400, "invalid-request")
    assert [error["key"] for error in problem.errors or []] == [key]


def test_a_move_the_rules_refuse_keeps_the_rules_title() -> None:
    state = hanabi_state()
    legal = ENGINE.handle(api.ListLegalActions(game="hanabi", state=state, seat=0))
    action = msgspec.Raw(msgspec.json.encode(legal[0]))
    out_of_turn = refusal(api.Decide(game="hanabi", state=state, seat=1, action=action))
    problem = rejection_problem(out_of_turn)
    assert (problem.code, problem.title) == ("not-your-turn", RULES_REFUSAL)


@pytest.mark.asyncio
async def test_a_start_while_postgres_refuses_connections_serves_not_ready() -> None:
    """Postgres refusing connections does not fail the start (the service would exit, and a
    supervisor restart it again and again): the process starts, says Postgres does not
    answer, keeps trying, and closes at once when asked."""
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, never listening: connections are refused
        runtime = Runtime(Settings(database_url=f"postgresql://postgres@127.0.0.1:{port}/none"))
        await runtime.start()
        failed = await ReadyChecks({"postgres": runtime.ready["postgres"]}).failed()
        assert failed == ["postgres did not answer (PoolClosed)"]
        started = [task for task in runtime._tasks if task.get_name() == "start"]
        assert started and not started[0].done()  # still trying
        await asyncio.wait_for(runtime.close(), 5)
    assert runtime._opened == []
    assert started[0].done()
