"""The committed contract is what the code generates, and it keeps the API's conventions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from services.operator.cli import CONTRACT_PATH
from services.rules.engine import RulesEngine
from services.rules.games import load_games
from shared.domain.match_file import json_schema
from shared.edge.contract import NUL_FREE
from tools.contract import (
    GAME_DATA,
    MATCH_FILE_SCHEMA,
    PER_GAME,
    build_contract,
    game_prefix,
    render,
    write_contract,
)


def test_committed_contract_is_current() -> None:
    assert CONTRACT_PATH.read_text() == render(build_contract()), (
        "openapi/openapi.json is stale: run `playtable openapi`"
    )


def test_committed_match_file_schema_is_current_and_checked(tmp_path) -> None:
    committed = CONTRACT_PATH.parent / MATCH_FILE_SCHEMA
    assert committed.read_text() == render(json_schema()), (
        f"openapi/{MATCH_FILE_SCHEMA} is stale: run `playtable openapi`"
    )
    copy = tmp_path / "openapi.json"
    assert write_contract(copy) == 0
    assert write_contract(copy, check=True) == 0
    (tmp_path / MATCH_FILE_SCHEMA).write_text("{}\n")
    assert write_contract(copy, check=True) == 1


def test_every_operation_has_an_id_and_problem_errors() -> None:
    contract = build_contract()
    assert contract["openapi"].startswith("3.1")
    seen = set()
    for path, item in contract["paths"].items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            assert operation.get("operationId"), f"{method} {path} has no operationId"
            assert operation["operationId"] not in seen
            seen.add(operation["operationId"])
            errors = {s: r for s, r in operation["responses"].items() if int(s) >= 400}
            assert errors, f"{method} {path} documents no error"
            for response in errors.values():
                assert list(response["content"]) == ["application/problem+json"]
    assert {"createTable", "joinTable", "startTable", "submitAction", "getMatch"} <= seen


def test_the_committed_contract_is_valid_openapi() -> None:
    validate(json.loads(CONTRACT_PATH.read_text()))


def test_the_match_file_schema_is_valid_json_schema() -> None:
    committed = CONTRACT_PATH.parent / MATCH_FILE_SCHEMA
    Draft202012Validator.check_schema(json.loads(committed.read_text()))


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return build_contract()


def test_match_data_is_typed_by_each_game(contract: dict[str, Any]) -> None:
    schemas = contract["components"]["schemas"]

    def ref(name: str) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{name}"}

    def nullable(name: str) -> dict[str, Any]:
        return {"oneOf": [ref(name), {"type": "null"}]}

    games = load_games()
    for game in games.values():
        prefix = game_prefix(game)
        legal, accepted = schemas[f"{prefix}LegalActions"], schemas[f"{prefix}ActionAccepted"]
        assert legal["properties"]["game"] == {"type": "string", "const": game.name}
        assert legal["properties"]["actions"]["items"] == ref(f"{prefix}Action")
        assert accepted["properties"]["events"]["items"] == ref(f"{prefix}Event")
        assert accepted["properties"]["view"] == ref(f"{prefix}View")
        assert schemas[f"{prefix}MatchEvent"]["properties"]["data"] == ref(f"{prefix}Event")
        assert schemas[f"{prefix}SubmitAction"]["properties"]["action"] == ref(f"{prefix}Action")
        info, replay = schemas[f"{prefix}MatchInfo"], schemas[f"{prefix}MatchReplay"]
        assert info["properties"]["view"] == nullable(f"{prefix}View")
        assert replay["properties"]["view"] == ref(f"{prefix}View")
        assert replay["properties"]["state"] == nullable(f"{prefix}State")
    for split in PER_GAME:
        assert schemas[split]["discriminator"] == {
            "propertyName": "game",
            "mapping": {
                game.name: ref(f"{game_prefix(game)}{split}")["$ref"] for game in games.values()
            },
        }
    for name in ("HanabiMatchInfo", "DingoMatchReplay", "HanabiActionAccepted"):
        assert schemas[name]["properties"]["result"] == nullable("Outcome")
    assert schemas["MatchFinished"]["properties"]["result"]["$ref"] == ref("Outcome")["$ref"]
    assert not set(GAME_DATA) & set(schemas), "no union over every game's data"
    hanabi_actions = schemas["HanabiAction"]
    assert hanabi_actions["discriminator"]["mapping"]["PlayCard"] == ref("HanabiPlayCard")["$ref"]
    assert schemas["HanabiPlayCard"]["properties"]["card"] == {"type": "integer"}
    assert schemas["DingoPlayCard"]["properties"]["card"]["type"] == "string"


def test_game_schemas_have_unique_titles(contract: dict[str, Any]) -> None:
    """Generated clients name their models after titles (``HanabiPlayCard``, ``DingoPlayCard``)."""
    schemas = contract["components"]["schemas"]
    titles = [schema["title"] for schema in schemas.values() if "title" in schema]
    assert len(titles) == len(set(titles))


@pytest.mark.parametrize("game", sorted(load_games()))
def test_the_catalogue_action_schema_agrees_with_the_contract(
    game: str, contract: dict[str, Any]
) -> None:
    entry = next(item for item in RulesEngine(load_games()).catalogue if item["name"] == game)
    catalogue = entry["action_schema"]
    union = contract["components"]["schemas"][game_prefix(load_games()[game]) + "Action"]
    assert _actions_by_tag(catalogue, catalogue) == _actions_by_tag(union, contract)


def _actions_by_tag(union: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """Each action's fields, references inlined and names left out (the contract prefixes them),
    and without the contract's pattern saying no string of a request holds NUL."""

    def resolve(ref: str) -> Any:
        node: Any = document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node

    def inlined(schema: Any) -> Any:
        if isinstance(schema, list):
            return [inlined(item) for item in schema]
        if not isinstance(schema, dict):
            return schema
        if "$ref" in schema:
            return inlined(resolve(schema["$ref"]))
        return {
            key: inlined(value)
            for key, value in schema.items()
            if key != "title" and (key, value) != ("pattern", NUL_FREE)
        }

    members = union.get("oneOf") or union["anyOf"]
    actions = [inlined(member) for member in members]
    return {action["properties"]["type"]["enum"][0]: action for action in actions}


def _operations(contract: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        operation["operationId"]: (path, operation)
        for path, item in contract["paths"].items()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    }


def test_closed_sets_of_values_are_enums(contract: dict[str, Any]) -> None:
    schemas = contract["components"]["schemas"]
    assert schemas["HanabiMatchInfo"]["properties"]["status"]["enum"] == [
        "creating",
        "running",
        "finished",
    ]
    assert schemas["TableInfo"]["properties"]["status"]["enum"] == ["open", "started", "closed"]
    assert schemas["TableInfo"]["properties"]["visibility"]["enum"] == ["public", "private"]
    assert "list[int]" in schemas["GameOption"]["properties"]["type"]["enum"]
    _, export = _operations(contract)["exportMatch"]
    (format_,) = [p for p in export["parameters"] if p["name"] == "format"]
    assert format_["schema"] == {
        "description": format_["schema"]["description"],
        "enum": ["playtable", "hanab.live", "carcassonne-turns"],
        "type": "string",
    }


def test_no_parameter_is_ever_null(contract: dict[str, Any]) -> None:
    for operation_id, (_, operation) in _operations(contract).items():
        for parameter in operation.get("parameters", []):
            text = json.dumps(parameter["schema"])
            assert '"null"' not in text and "null" not in parameter["schema"].get("enum", [1]), (
                operation_id,
                parameter["name"],
            )


def test_request_bodies_that_refuse_extra_fields_say_so(contract: dict[str, Any]) -> None:
    schemas = contract["components"]["schemas"]
    for operation_id, (_, operation) in _operations(contract).items():
        if "requestBody" not in operation:
            continue
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = schemas[ref.rpartition("/")[2]]
        for variant in body.get("oneOf", [{"$ref": ref}]):  # one body per game: each of them
            name = variant["$ref"].rpartition("/")[2]
            assert schemas[name].get("additionalProperties") is False, (operation_id, name)


def test_links_lead_from_a_new_table_to_a_move(contract: dict[str, Any]) -> None:
    operations = _operations(contract)
    chain = ["createTable", "joinTable", "startTable", "getMatch", "listLegalActions"]
    for source, target in zip(chain, [*chain[1:], "submitAction"], strict=True):
        _, operation = operations[source]
        targets = {
            link["operationId"]
            for response in operation["responses"].values()
            for link in response.get("links", {}).values()
        }
        assert target in targets, f"no link from {source} to {target}"
    for source, (_, operation) in operations.items():
        for response in operation["responses"].values():
            for link in response.get("links", {}).values():
                target_path, target = operations[link["operationId"]]
                names = {p["name"] for p in target.get("parameters", [])}
                assert set(link["parameters"]) <= names, (source, link)


def test_feeds_document_their_events(contract: dict[str, Any]) -> None:
    operations = _operations(contract)
    for operation_id, expected in [
        ("followMatch", {"MatchFinished", "ClueGiven", "TilePlaced"}),
        ("followTable", {"TableCreated", "SeatTaken", "SeatLeft", "TableStarted"}),
    ]:
        events = operations[operation_id][1]["responses"]["200"]["x-sse-events"]
        assert expected <= set(events), operation_id
        for schema in events.values():
            assert schema["$ref"].rpartition("/")[2] in contract["components"]["schemas"]


def test_the_shared_table_event_names_are_the_lobbys() -> None:
    from services.rules.games.contract import struct_tags
    from shared.domain.messages import TABLE_EVENT_TYPES, TableEvent

    assert tuple(struct_tags(TableEvent)) == TABLE_EVENT_TYPES


def test_webhook_event_types_are_every_event_a_subscription_can_get(
    contract: dict[str, Any],
) -> None:
    names = contract["components"]["schemas"]["WebhookEventType"]["enum"]
    assert {"TableCreated", "MatchFinished", "ClueGiven", "TilePlaced"} <= set(names)
    catalogue = RulesEngine(load_games()).catalogue
    assert {name for game in catalogue for name in game["event_types"]} < set(names)


def _games_reached(contract: dict[str, Any]) -> Any:
    """``reached(schema)``: the games whose own schemas (named after them: ``HanabiPlayCard``)
    ``schema`` refers to, directly or through other components."""
    schemas = contract["components"]["schemas"]
    prefixes = {game_prefix(game): game.name for game in load_games().values()}
    by_component: dict[str, frozenset[str]] = {}

    def game_of(name: str) -> set[str]:
        return {game for prefix, game in prefixes.items() if name.startswith(prefix)}

    def reached(schema: Any) -> frozenset[str]:
        if isinstance(schema, list):
            return frozenset().union(*(reached(item) for item in schema))
        if not isinstance(schema, dict):
            return frozenset()
        found: set[str] = set()
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                name = value.rpartition("/")[2]
                if name not in by_component:
                    by_component[name] = frozenset()  # a cycle adds nothing new
                    by_component[name] = frozenset(game_of(name)) | reached(schemas[name])
                found |= by_component[name]
            elif key != "discriminator":
                found |= reached(value)
        return frozenset(found)

    return reached


def _unions(node: Any, pointer: str = "") -> Any:
    """Every ``oneOf``/``anyOf`` in ``node``, with where it is."""
    if isinstance(node, list):
        for number, item in enumerate(node):
            yield from _unions(item, f"{pointer}/{number}")
    elif isinstance(node, dict):
        for keyword in ("oneOf", "anyOf"):
            if isinstance(node.get(keyword), list):
                yield pointer, node
                break
        for key, value in node.items():
            yield from _unions(value, f"{pointer}/{key}")


def test_no_union_leaves_a_client_to_guess_the_game(contract: dict[str, Any]) -> None:
    """Tags such as ``PlayCard`` repeat across games: a union without a discriminator whose
    members lead to two games' schemas (actions, events, views) lets a generated client read one
    game's data as another's (Dingo's ``PlayCard`` as Hanabi's), and a request of one game pass
    for another's. Each such union must be discriminated (on ``game``, or on tags no two games
    share); a nullable reference (one member with game data, ``null``) is not a choice."""
    reached = _games_reached(contract)
    guessed = []
    for pointer, union in _unions(contract):
        if "discriminator" in union:
            continue
        members = union.get("oneOf") or union["anyOf"]
        with_games = [games for games in map(reached, members) if games]
        if len(with_games) > 1 and len(frozenset().union(*with_games)) > 1:
            guessed.append(f"{pointer}: {sorted(frozenset().union(*with_games))}")
    assert guessed == []
    assert reached({"$ref": "#/components/schemas/HanabiPlayCard"}) == {"hanabi"}


def test_a_move_names_its_game(contract: dict[str, Any]) -> None:
    """The move's body is one body per game, told apart by ``game``, each holding only that
    game's actions: a Dingo ``PlayCard`` is no valid Hanabi move, even by its schema."""
    schemas = contract["components"]["schemas"]
    _, submit = _operations(contract)["submitAction"]
    body = submit["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/SubmitAction"}
    games = load_games()
    mapping = {
        game.name: f"#/components/schemas/{game_prefix(game)}SubmitAction"
        for game in games.values()
    }
    assert schemas["SubmitAction"]["discriminator"] == {"propertyName": "game", "mapping": mapping}
    for game in games.values():
        variant = schemas[f"{game_prefix(game)}SubmitAction"]
        assert variant["properties"]["game"] == {"type": "string", "const": game.name}
        assert variant["properties"]["action"] == {
            "$ref": f"#/components/schemas/{game_prefix(game)}Action"
        }
        assert {"game", "action", "expected_version"} <= set(variant["required"])
        assert variant["additionalProperties"] is False
