"""Every code the rules can refuse a move with is documented: the API contract lists each one as
a problem type (``.../problems/<code>``), so an undocumented code would send clients to a type
nobody described, and a stale entry would describe a refusal that never happens.

The codes are read from the source (every ``Rejection(...)`` call), not from playing, so a
refusal no test reaches is still checked. Every module of a game's package
(``carcassonne/messengers.py``) counts as the game's; the codes of ``contract.py`` are the ones
every game shares."""

from __future__ import annotations

import ast
import functools
import importlib
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from services.rules import games
from services.rules.games.contract import COMMON_REFUSALS
from services.rules.games.registry import GAMES
from shared.edge.problems import PROBLEM_TYPES

GAMES_DIR = Path(games.__file__).parent
GAME_MODULES = tuple(GAMES)
"""Each game's package is named as the game."""
SHARED = "contract"
"""The module whose refusals every game shares (``COMMON_REFUSALS``)."""
NOT_RULES_OF_PLAY = frozenset(code.replace("-", "_") for code in PROBLEM_TYPES)
"""Refusals documented with the services' problems (options, seat counts), not as rules."""
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
ONE_LINE_SENTENCE = re.compile(r"[A-Z][^\n]*\S\.")


def documented(module: str) -> Mapping[str, str]:
    """The refusals a module's codes must be documented in."""
    if module == SHARED:
        return COMMON_REFUSALS
    return importlib.import_module(f"{games.__name__}.{module}").GAME.refusals


def owner(path: Path) -> str | None:
    """The game (or ``contract``) a module's refusals belong to: every module of a game's
    package counts as the game's."""
    if path.parent == GAMES_DIR:
        return SHARED if path.stem == SHARED else None
    return path.parent.name if path.parent.name in GAME_MODULES else None


def rejection_codes(path: Path) -> set[str]:
    """The code of every ``Rejection(...)`` call in the module. A code computed at run time
    fails the test: nobody could list it in the contract."""
    codes = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), path.name)):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        name = called.id if isinstance(called, ast.Name) else getattr(called, "attr", None)
        if name != "Rejection":
            continue
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        code = node.args[0] if node.args else keywords.get("code")
        if not (isinstance(code, ast.Constant) and type(code.value) is str):
            pytest.fail(f"{path.name}:{node.lineno}: a Rejection's code must be a string literal")
        codes.add(code.value)
    return codes


@functools.cache
def returned_codes() -> dict[str, frozenset[str]]:
    """Every refusal code in the source, by the game module (or ``contract``) it belongs to."""
    found: dict[str, set[str]] = {module: set() for module in (*GAME_MODULES, SHARED)}
    for path in sorted(GAMES_DIR.rglob("*.py")):
        codes = rejection_codes(path)
        module = owner(path)
        assert module or not codes, f"{path.name} refuses with {sorted(codes)} for no game"
        if module:
            found[module] |= codes
    return {module: frozenset(codes) for module, codes in found.items()}


@pytest.mark.parametrize("module", GAME_MODULES)
def test_every_code_a_game_refuses_with_is_documented(module: str) -> None:
    undocumented = (
        returned_codes()[module]
        - set(documented(module))
        - set(COMMON_REFUSALS)
        - NOT_RULES_OF_PLAY
    )
    assert not undocumented, f"{module}: add {sorted(undocumented)} to its refusals"


@pytest.mark.parametrize("module", (*GAME_MODULES, SHARED))
def test_every_documented_refusal_happens(module: str) -> None:
    stale = set(documented(module)) - returned_codes()[module]
    assert not stale, f"{module}: no Rejection returns {sorted(stale)}"


def test_the_shared_code_documents_its_own_refusals() -> None:
    assert returned_codes()[SHARED] <= set(COMMON_REFUSALS) | NOT_RULES_OF_PLAY


@pytest.mark.parametrize("module", GAME_MODULES)
def test_a_game_leaves_the_common_refusals_to_the_contract(module: str) -> None:
    twice = set(documented(module)) & (set(COMMON_REFUSALS) | NOT_RULES_OF_PLAY)
    assert not twice, f"{module}: {sorted(twice)} are documented in COMMON_REFUSALS already"


@pytest.mark.parametrize("module", (*GAME_MODULES, SHARED))
def test_refusals_are_snake_case_codes_and_one_sentence_each(module: str) -> None:
    for code, description in documented(module).items():
        assert SNAKE_CASE.fullmatch(code), f"{module}: {code!r} is not snake_case"
        assert ONE_LINE_SENTENCE.fullmatch(description), f"{module} {code}: {description!r}"
        assert ". " not in description, f"{module} {code}: one sentence, please"
        assert ": " in description, f"{module} {code}: say when, then what to do instead"
