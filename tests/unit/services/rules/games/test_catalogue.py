"""The catalogue a setup screen is built from: every option has a person's title and help, its
dependencies name real options and values, and a table setting a dependent option without
what it requires is refused (the lobby answers 422 ``bad-option``); a number of players taken
only with some options says which, and is refused without them (422 ``bad-seat-count``); the
hosting policies it offers are the ones each game's rules can honour."""

from __future__ import annotations

import msgspec
import pytest

from services.lobby.schemas import GameInfo
from services.rules.engine import RulesEngine
from services.rules.games import load_games
from services.rules.games.contract import (
    Game,
    OptionSpec,
    PlayersRequirement,
    Rejection,
    struct_tags,
)
from shared.domain.hosting import PASS_ACTIONS, Hosting, TimeControl, timeout_problem

GAMES = load_games()
ENGINE = RulesEngine(GAMES)
OPTIONS = [(game, spec) for game in GAMES.values() for spec in game.options]
DEPENDENT = [(game, spec) for game, spec in OPTIONS if spec.requires]
PLAYERS_REQUIREMENTS = [
    (game, requirement) for game in GAMES.values() for requirement in game.players_requirements
]


def _label(case: tuple[Game, OptionSpec]) -> str:
    return f"{case[0].name}.{case[1].name}"


def _set_value(spec: OptionSpec) -> object:
    """A value other than the default that the option's type takes."""
    if spec.type == "bool":
        return not spec.default
    assert spec.choices, spec.name  # the dependent options are flags and choices
    return next(choice for choice in spec.choices if choice != spec.default)


@pytest.mark.parametrize("case", OPTIONS, ids=[_label(case) for case in OPTIONS])
def test_every_option_has_a_title_and_help(case: tuple[Game, OptionSpec]) -> None:
    _, spec = case
    assert spec.title.strip() and spec.title != spec.name
    assert "_" not in spec.title, "a title is words, not an identifier"
    assert len(spec.description) >= 30, "the help says what the option does"
    assert spec.secret == ("(secret)" in spec.title), "a secret option says so in its title"


def test_some_options_depend_on_others() -> None:
    assert {_label(case) for case in DEPENDENT} >= {
        "carcassonne.messengers_edition",
        "carcassonne.zmg_alone_rule",
        "carcassonne.message_order",
    }


@pytest.mark.parametrize("case", DEPENDENT, ids=[_label(case) for case in DEPENDENT])
def test_a_requirement_names_another_option_and_a_value_it_takes(
    case: tuple[Game, OptionSpec],
) -> None:
    game, spec = case
    names = {other.name for other in game.options}
    assert all(name != spec.name and name in names for name in spec.requires)
    resolved = game.resolve_options(dict(spec.requires), game.min_players)
    assert not isinstance(resolved, Rejection), resolved


@pytest.mark.parametrize("case", DEPENDENT, ids=[_label(case) for case in DEPENDENT])
def test_a_dependent_option_is_refused_without_its_requirements(
    case: tuple[Game, OptionSpec],
) -> None:
    game, spec = case
    if spec.type not in ("bool", "enum"):
        pytest.skip("an explicit order is checked with its requirement below")
    value = _set_value(spec)
    refused = game.resolve_options({spec.name: value}, game.min_players)
    assert isinstance(refused, Rejection)
    assert refused.code == "bad_option"
    for name in spec.requires:
        assert repr(name) in refused.detail and spec.title in refused.detail
    accepted = game.resolve_options({**spec.requires, spec.name: value}, game.min_players)
    assert not isinstance(accepted, Rejection), accepted
    at_default = game.resolve_options({spec.name: spec.default}, game.min_players)
    assert not isinstance(at_default, Rejection), "an option left at its default needs nothing"


def test_a_message_order_needs_the_messengers() -> None:
    game = GAMES["carcassonne"]
    order = list(range(1, 9))
    refused = game.resolve_options({"message_order": order}, 2)
    assert isinstance(refused, Rejection) and "'messengers'" in refused.detail
    accepted = game.resolve_options({"messengers": True, "message_order": order}, 2)
    assert not isinstance(accepted, Rejection), accepted


@pytest.mark.parametrize(
    "case",
    PLAYERS_REQUIREMENTS,
    ids=[f"{game.name}.{needs.players}" for game, needs in PLAYERS_REQUIREMENTS],
)
def test_a_number_of_players_is_taken_with_any_of_its_options_and_refused_without(
    case: tuple[Game, PlayersRequirement],
) -> None:
    game, needs = case
    assert game.min_players <= needs.players <= game.max_players
    assert needs.requires_any, "a requirement offers at least one way to meet it"
    specs = {spec.name: spec for spec in game.options}
    for settings in needs.requires_any:
        resolved = game.resolve_options(dict(settings), needs.players)
        assert not isinstance(resolved, Rejection), (settings, resolved)
        assert all(specs[name].default != wanted for name, wanted in settings.items())
    refused = game.resolve_options({}, needs.players)
    assert isinstance(refused, Rejection) and refused.code == "bad_seat_count"
    for settings in needs.requires_any:
        for name in settings:
            assert repr(name) in refused.detail and specs[name].title in refused.detail
    fewer = game.resolve_options({}, needs.players - 1)
    assert not isinstance(fewer, Rejection), "the requirement is for that many players only"


def test_carcassonne_says_a_sixth_seat_needs_a_sixth_colour_and_the_others_need_nothing() -> None:
    entries = {entry["name"]: entry for entry in ENGINE.catalogue}
    assert entries["carcassonne"]["players_requirements"] == [
        {"players": 6, "requires_any": [{"messengers": True}, {"inns_cathedrals": True}]}
    ]
    assert all(
        entry["players_requirements"] == []
        for name, entry in entries.items()
        if name != "carcassonne"
    )
    sixth = GAMES["carcassonne"].resolve_options({"traders_builders": True}, 6)
    assert sixth == Rejection(
        "bad_seat_count",
        "6 players need option 'messengers' (The Messengers) set to true or option"
        " 'inns_cathedrals' (Inns & Cathedrals) set to true: set one, or seat fewer players",
    )


def test_the_lobby_reads_the_requirements_from_the_rules_catalogue() -> None:
    """The lobby's ``GameInfo`` decodes the rules service's entries, requirements and all, and
    an entry from a rules worker without them (a rolling upgrade) as requiring nothing."""
    wire = msgspec.json.encode(ENGINE.catalogue)
    games = {game.name: game for game in msgspec.json.decode(wire, type=list[GameInfo])}
    assert games["carcassonne"].players_requirements == list(
        GAMES["carcassonne"].players_requirements
    )
    older = {key: value for key, value in ENGINE.catalogue[0].items()}
    del older["players_requirements"]
    assert msgspec.convert(older, GameInfo).players_requirements == []


def test_the_catalogue_serves_titles_requirements_and_policies() -> None:
    entries = {entry["name"]: entry for entry in ENGINE.catalogue}
    edition = next(
        option
        for option in entries["carcassonne"]["options"]
        if option["name"] == "messengers_edition"
    )
    assert edition["title"] == "Messengers edition"
    assert edition["requires"] == {"messengers": True}
    for name, entry in entries.items():
        timeouts = [policy["name"] for policy in entry["timeout_policies"]]
        assert ("pass" in timeouts) == (name in PASS_ACTIONS), name
        assert {"forfeit", "bot"} <= set(timeouts)
        assert [policy["name"] for policy in entry["leave_policies"]] == ["abandon", "bot"]
        assert all(policy["description"] for policy in entry["timeout_policies"])
        together = "all of them lose" in entry["leave_policies"][0]["description"]
        assert together == GAMES[name].cooperative, name


def test_a_pass_is_an_action_of_its_game() -> None:
    for game, action in PASS_ACTIONS.items():
        assert action in struct_tags(GAMES[game].action_type)


def test_breaking_news_says_what_a_pass_does_when_none_is_legal() -> None:
    entry = next(entry for entry in ENGINE.catalogue if entry["name"] == "breaking_news")
    passing = next(policy for policy in entry["timeout_policies"] if policy["name"] == "pass")
    assert "PassTurn" in passing["description"]
    assert "no pass is legal" in passing["description"] and "forfeits" in passing["description"]


@pytest.mark.parametrize("game", sorted(GAMES))
def test_pass_on_timeout_only_for_a_game_with_a_pass(game: str) -> None:
    hosting = Hosting(clock=TimeControl(per_move_s=30), on_timeout="pass")
    problem = timeout_problem(game, hosting)
    if game in PASS_ACTIONS:
        assert problem is None
    else:
        assert problem is not None and "no pass" in problem and game in problem
    assert timeout_problem(game, Hosting(on_timeout="forfeit")) is None
