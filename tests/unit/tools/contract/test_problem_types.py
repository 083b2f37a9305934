"""Every problem the code can answer with is documented in ``shared/edge/problems.py`` with the same
status and title (and so listed in the contract), and nothing documented there is stale."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from shared.edge.errors import PROBLEM_TYPE_BASE
from shared.edge.problems import PROBLEM_TYPES
from tools.contract import build_contract

ROOT = Path(__file__).resolve().parents[4]
SOURCES = sorted([*(ROOT / "services").rglob("*.py"), *(ROOT / "shared").rglob("*.py")])


def _constant(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def raised_problems() -> Iterator[tuple[str, int, str | None, str]]:
    """(code, status, title or None, where) of every literal problem in the code: a call
    whose first arguments are an error status and a code (``Problem(...)``, a subclass's
    ``super().__init__(...)``), and every ``not_found(what, ...)``."""
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            args = [_constant(arg) for arg in node.args[:3]]
            name = getattr(node.func, "id", None)
            if name == "not_found" and isinstance(args[0], str):
                yield f"{args[0]}-not-found", 404, f"{args[0].capitalize()} not found", where
            elif (
                len(args) >= 2
                and isinstance(args[0], int)
                and 400 <= args[0] < 600
                and isinstance(args[1], str)
            ):
                title = args[2] if len(args) == 3 and isinstance(args[2], str) else None
                yield args[1], args[0], title, where


def rules_service_refusals(called: str) -> Iterator[tuple[str, str]]:
    """(code, where) of every literal refusal of the rules service: ``Rejected("code", ...)``
    (the engine and the worker), or ``Rejection("code", ...)`` (the games)."""
    for path in (ROOT / "services" / "rules").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and node.args:
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                code = _constant(node.args[0])
                if name == called and isinstance(code, str):
                    yield code, f"{path.relative_to(ROOT)}:{node.lineno}"


def generic_http_problems() -> dict[str, tuple[int, str]]:
    """What ``shared/edge/errors.py`` answers for Litestar's own HTTP errors, by code."""
    from shared.edge.errors import _OTHER_STATUS, _STATUS_CODES

    generic = {code: (status, title) for status, (code, title) in _STATUS_CODES.items()}
    return generic | {_OTHER_STATUS[0]: (PROBLEM_TYPES[_OTHER_STATUS[0]].status, _OTHER_STATUS[1])}


def test_every_raised_problem_is_documented_with_its_status_and_title() -> None:
    found = list(raised_problems())
    assert len(found) > 30
    for code, status, title, where in found:
        assert code in PROBLEM_TYPES, f"{where}: {code!r} is not in shared/edge/problems.py"
        documented = PROBLEM_TYPES[code]
        assert documented.status == status, f"{where}: {code} is {status}, documented {documented}"
        if title is not None:
            assert documented.title == title, f"{where}: {code} titled {title!r}, documented"


def test_refusals_no_rule_of_play_decides_are_documented() -> None:
    refusals = list(rules_service_refusals("Rejected"))
    assert refusals
    for code, where in refusals:
        assert code.replace("_", "-") in PROBLEM_TYPES, f"{where}: {code} is not documented"


def test_litestar_errors_are_documented() -> None:
    for code, (status, title) in generic_http_problems().items():
        assert (PROBLEM_TYPES[code].status, PROBLEM_TYPES[code].title) == (status, title)


def test_nothing_documented_is_stale() -> None:
    answered = {code for code, *_ in raised_problems()}
    for called in ("Rejected", "Rejection"):
        answered |= {code.replace("_", "-") for code, _ in rules_service_refusals(called)}
    answered |= set(generic_http_problems())
    assert set(PROBLEM_TYPES) - answered == set()


def test_the_contract_lists_every_problem_type_once() -> None:
    listed = build_contract()["x-problem-types"]
    types = [entry["type"] for entry in listed]
    assert len(types) == len(set(types))
    assert {PROBLEM_TYPE_BASE + code for code in PROBLEM_TYPES} <= set(types)
    for entry in listed:
        assert entry["type"] == PROBLEM_TYPE_BASE + entry["code"]
        assert entry["title"] and entry["description"].strip()
        assert 400 <= entry["status"] < 600
    assert PROBLEM_TYPE_BASE + "clue-to-self" in types  # a refusal of Hanabi's rules
