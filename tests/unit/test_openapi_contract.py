"""The committed contract is what the code generates, and it keeps the API's conventions."""

from __future__ import annotations

from services.cli import CONTRACT_PATH
from services.contract import MATCH_FILE_SCHEMA, build_contract, render, write_contract
from shared.match_file import json_schema


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
