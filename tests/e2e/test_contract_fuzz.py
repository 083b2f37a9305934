"""Schemathesis against the running stack: every operation of the committed contract, all checks.

The contract (``openapi/openapi.json``) is the promise to client apps, so it is fuzzed as
committed: for each operation its examples, the coverage cases and random valid and invalid
requests, then multi-step scenarios along its links. A 5xx, a response or status code the
contract does not document, any failed check, fails the run; nothing is waived per operation or
status, and strings may hold NUL (the contract says where the server refuses it).

One rule stands in for what no schema can state: schemathesis' "a schema-valid request is
accepted" check lets a refusal pass when its problem ``type`` is one the contract's
``x-problem-types`` marks ``state: true``: what decides it is the state the request meets (a
table's seats and visibility, a match's game and moves, the games' rules, where a URL leads),
not the request. Any other 400 or 422 to a schema-valid request means the contract failed to say
what the server knows from the request alone, and fails the run.

Seeded and deterministic, so CI fails the same way every time. Every operation is fuzzed at the
first seed (its examples, coverage cases and random requests); the linked scenarios run at both.
The operations' random requests at the second seed doubled the run's heaviest file (77 s and
about 60 CPU-s of the pytest process on two cores) for requests of the same shapes, so they are
left to the first.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import hypothesis
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis.errors import FailureGroup
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

from services.operator.cli import CONTRACT_PATH
from shared.edge.apps import API_KEY_HEADER
from tests.e2e.conftest import Gateway
from tests.e2e.contract_fuzz import (
    LOOPBACK,
    LinkCredentials,
    Routes,
    Stage,
    WebhookSink,
    prepare,
)

pytestmark = pytest.mark.e2e  # the ``gateway`` fixture skips where nginx is missing

SEEDS = (20_240_917, 7)
MAX_EXAMPLES = 25
"""Random cases per operation in the fuzzing phase; examples and coverage cases come on top
(at 50 the file was the run's longest, 226 s of 655 on a slow day, for requests of the same
shapes)."""
SCENARIOS = 50
SCENARIO_STEPS = 10
REQUEST_TIMEOUT_S = 5.0
FEED_READ_S = 0.5
"""How long a live feed (it never ends by itself) is read before it is checked: its backlog
comes at once on loopback, then it only waits."""
FEED_EXAMPLES = 50
OPERATOR_KEY = "pt_contract-fuzz-operator-key"
"""The fuzzed stack's operator key (``PLAYTABLE_OPERATOR_KEY``), for the ``seat`` caller."""


def config(seed: int) -> schemathesis.Config:
    """The run at ``seed``; the examples and coverage cases, the same at every seed, are sent at
    the first seed only."""
    deterministic = seed == SEEDS[0]
    return schemathesis.Config.from_dict(
        {
            "seed": seed,
            "suppress-health-check": ["all"],
            "request-timeout": REQUEST_TIMEOUT_S,
            "max-stream-events": 20,
            "checks": {
                "enabled": True,
                # ``accepted_unless_state_decides`` below, with the contract's one rule
                "positive_data_acceptance": {"enabled": False},
            },
            "generation": {
                "mode": "all",
                "max-examples": MAX_EXAMPLES,
                "deterministic": True,
                "database": "none",
                "no-shrink": True,
            },
            "phases": {
                "examples": {"enabled": deterministic},
                "coverage": {"enabled": deterministic},
                "fuzzing": {"enabled": True},
                # the contract's own links only: inferred ones dilute create-join-start-play
                "stateful": {
                    "enabled": True,
                    "max-steps": SCENARIO_STEPS,
                    "inference": {"algorithms": []},
                },
            },
            "operations": [
                {
                    "include-path-regex": "/feed$",
                    "request-timeout": FEED_READ_S,
                    "generation": {"max-examples": FEED_EXAMPLES},
                },
            ],
        }
    )


CONTRACT = json.loads(CONTRACT_PATH.read_text())
SCHEMAS = {seed: schemathesis.openapi.from_dict(CONTRACT, config=config(seed)) for seed in SEEDS}
DECIDED_BY_STATE = frozenset(
    problem["type"] for problem in CONTRACT["x-problem-types"] if problem["state"]
)
"""Problem types a schema-valid request may get: what decides is the state it meets."""


@schemathesis.check
def accepted_unless_state_decides(
    ctx: schemathesis.CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """Schemathesis' ``positive_data_acceptance``, but a refusal whose problem type the
    contract marks as decided by state passes."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        try:
            problem_type = response.json().get("type")
        except (ValueError, AttributeError):
            problem_type = None
        if problem_type in DECIDED_BY_STATE:
            return None
        raise


@dataclass
class Live:
    """What only exists once the stack runs; schemathesis' hooks and auth read it from here."""

    routes: Routes
    stage: Stage
    sink: WebhookSink
    session: requests.Session
    """One client's kept-alive connections for every request, as an app's would be."""
    caller: str | None = None
    """``seat`` or ``stranger`` in the stateless tests, ``scenario`` in the linked ones."""


LIVE: list[Live] = []
TALLY: Counter[str] = Counter()


@schemathesis.auth(refresh_interval=None)
class SeatCredentials:
    """For the ``seat`` caller, the credentials each operation declares: the app's or the
    operator's key, a real seat's token (or a private table's invitation); in a ``scenario``,
    the keys only (the links bring the tokens). A ``stranger`` keeps what schemathesis
    generates (none, or made-up ones)."""

    def get(self, case: schemathesis.Case, ctx: schemathesis.AuthContext) -> Stage | None:
        return LIVE[0].stage if LIVE and LIVE[0].caller in ("seat", "scenario") else None

    def set(self, case: schemathesis.Case, stage: Stage, ctx: schemathesis.AuthContext) -> None:
        security = ctx.operation.definition.raw.get("security")
        tokens = LIVE[0].caller == "seat"
        case.headers = {**(case.headers or {}), **stage.credentials_for(security, tokens=tokens)}


@schemathesis.hook
def map_case(context: schemathesis.HookContext, case: schemathesis.Case) -> schemathesis.Case:
    """Aim valid requests at real games half of the time, and stateless ones at real tables and
    matches too (in scenarios, the links bring those)."""
    live = LIVE[0] if LIVE else None
    if live and case.meta is not None and case.meta.generation.mode.is_positive:
        stateless = live.caller in ("seat", "stranger")
        live.stage.aim(case.path_parameters if stateless else None, case.body)
    return case


@pytest.fixture(scope="module")
def webhook_sink() -> Iterator[WebhookSink]:
    with WebhookSink().running() as sink:
        yield sink


@pytest.fixture(scope="module")
def fuzzed_stack(request: pytest.FixtureRequest, webhook_sink: WebhookSink) -> Gateway:
    """The stack, its webhooks allowed to reach the loopback sink and nothing else.

    The SSRF guard refuses loopback unless allowed but lets any public address through (the
    contract's own examples name hooks.example.com), so fuzzed subscriptions are pointed at the
    sink (``prepare``), and should one slip by, the stack's outgoing HTTP goes through the sink
    as its proxy.
    """
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PLAYTABLE_WEBHOOK_ALLOWED_NETWORKS", f"{LOOPBACK}/32")
        env.setenv("PLAYTABLE_OPERATOR_KEY", OPERATOR_KEY)
        for name, value in webhook_sink.proxy_env().items():
            env.setenv(name, value)
        return request.getfixturevalue("gateway")  # it copies the environment as it starts


@pytest.fixture(scope="module")
def live(fuzzed_stack: Gateway, webhook_sink: WebhookSink) -> Iterator[Live]:
    lobby = f"http://{LOOPBACK}:{fuzzed_stack.stack.env['PLAYTABLE_LOBBY_PORT']}"
    routes = Routes(str(fuzzed_stack.client.base_url).rstrip("/"), lobby)
    stage = Stage.open(fuzzed_stack, OPERATOR_KEY)
    with requests.Session() as session:
        LIVE.append(Live(routes=routes, stage=stage, sink=webhook_sink, session=session))
        try:
            yield LIVE[0]
        finally:
            LIVE.clear()


class DistinctFailures:
    """Failures already reported, so the fuzzing goes on after the first one and every distinct
    failure (check and operation) shows as a subtest of its own, once."""

    def __init__(self, subtests: pytest.Subtests) -> None:
        self.subtests = subtests
        self.seen: list[AssertionError] = []  # schemathesis failures compare by check

    def validate(self, run: Callable[[], object]) -> None:
        try:
            run()
        except FailureGroup as group:
            fresh = [failure for failure in group.exceptions if failure not in self.seen]
            self.seen.extend(fresh)
            if fresh:
                titles = "; ".join(f"{failure.code} {failure.title}" for failure in fresh)
                with self.subtests.test(msg=titles):
                    raise


@schemathesis.hook
def after_validate(
    context: schemathesis.HookContext,
    case: schemathesis.Case,
    response: schemathesis.Response,
    results: list[schemathesis.CheckResult],
) -> None:
    """Count requests, answers and checks, for the summary the last test prints."""
    TALLY["requests"] += 1
    TALLY[f"{response.status_code // 100}xx"] += 1
    if LIVE and LIVE[0].caller == "scenario":
        TALLY["scenario steps"] += 1
        TALLY["scenario steps answered 2xx"] += response.status_code < 300
    for result in results:
        TALLY["checks"] += 1
        TALLY["failed checks"] += result.failure is not None


@pytest.fixture
def failures(subtests: pytest.Subtests) -> DistinctFailures:
    return DistinctFailures(subtests)


@pytest.fixture
def caller(request: pytest.FixtureRequest, live: Live) -> Iterator[str]:
    """Who calls, for the auth and aiming hooks (which run before the test body sees a case)."""
    method, _, path = getattr(request.node, "operation_label", "").partition(" ")
    operation = CONTRACT["paths"].get(path, {}).get(method.lower(), {})
    if request.param == "seat" and not operation.get("security"):
        pytest.skip("the operation takes no credentials: the stranger's run covers it")
    live.caller = request.param
    try:
        yield request.param
    finally:
        live.caller = None


@SCHEMAS[SEEDS[0]].parametrize()
@pytest.mark.parametrize("caller", ["seat", "stranger"], indirect=True)
def test_every_operation_keeps_the_contract(
    case: schemathesis.Case, caller: str, live: Live, failures: DistinctFailures
) -> None:
    """Examples, coverage cases and fuzzed requests, one test per operation and caller: a
    player with a real seat's token, and a stranger whose credentials are made up or none
    (pytest 9.2 gives schemathesis' unparametrized tests one node id; this parametrization
    keeps each operation's failures its own)."""
    prepare(case, live.sink.netloc)
    base_url = live.routes.base_url(case.operation.base_url)
    failures.validate(lambda: case.call_and_validate(base_url=base_url, session=live.session))


@pytest.mark.xfail(
    raises=hypothesis.errors.FlakyStrategyDefinition,
    strict=False,
    reason="inconclusive, not a contract failure: after the whole suite, the server's answers"
    " (which fill the scenarios' bundles) differed between two runs of one scenario prefix, so"
    " Hypothesis stopped; any failed check still fails the test",
)
@pytest.mark.parametrize("seed", SEEDS)
def test_linked_scenarios_keep_the_contract(
    seed: int, live: Live, failures: DistinctFailures
) -> None:
    """Sequences along the contract's links (create, join, start, play), each response's ids
    and tokens carried into the next request (the app's key is staged, the links bring the
    tokens)."""
    credentials = LinkCredentials(CONTRACT)
    live.caller = "scenario"

    @hypothesis.seed(seed)
    class Scenarios(SCHEMAS[seed].as_state_machine()):  # type: ignore[misc]
        def step(self, input: Any) -> Any:
            token = credentials.authorization(input.transition)
            if token is not None:
                input.case.headers = {**(input.case.headers or {}), "Authorization": token}
                # a real seat's token, which schemathesis would otherwise take for one it made
                # up (``ignored_auth``: a 2xx to "generated" credentials fails)
                input.case._has_explicit_auth = True
            output = super().step(input)
            credentials.record(output.case, token, output.response)
            return output

        def before_call(self, case: schemathesis.Case) -> None:
            prepare(case, live.sink.netloc)

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {
                "base_url": live.routes.base_url(case.operation.base_url),
                "session": live.session,
            }

        def validate_response(
            self, response: schemathesis.Response, case: schemathesis.Case, *args, **kwargs
        ) -> None:
            check = super().validate_response
            failures.validate(lambda: check(response, case, *args, **kwargs))

    try:
        Scenarios.run(
            settings=hypothesis.settings(
                max_examples=SCENARIOS,
                stateful_step_count=SCENARIO_STEPS,
                database=None,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
        )
    finally:
        live.caller = None


def test_webhooks_stayed_on_loopback(live: Live) -> None:
    """Whatever the fuzzing subscribed, nothing was sent off this machine."""
    TALLY["webhook deliveries to the sink"] = live.sink.deliveries
    print("contract fuzz:", ", ".join(f"{count} {name}" for name, count in TALLY.items()))
    listed = httpx.get(
        f"{live.routes.public}/webhooks/subscriptions",
        headers={API_KEY_HEADER: live.stage.app_key},
        timeout=10,
    )
    assert listed.status_code == 200, listed.text
    outside = [item["url"] for item in listed.json() if live.sink.netloc not in item["url"]]
    assert not outside, outside
    assert not live.sink.left_loopback, live.sink.left_loopback
