"""The contract declares the headers and credentials the services send and take, and pages
and timestamps in one style."""

from __future__ import annotations

from typing import Any

import pytest

from shared.edge.contract import CREDENTIALS
from shared.edge.errors import CHALLENGES
from tools.contract import build_contract


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    return build_contract()


def operations(contract: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (operation["operationId"], operation)
        for item in contract["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    ]


def test_every_answer_declares_the_rate_limit_headers(contract: dict[str, Any]) -> None:
    for operation_id, operation in operations(contract):
        for status, response in operation["responses"].items():
            headers = response.get("headers", {})
            assert {"RateLimit", "RateLimit-Policy"} <= set(headers), (operation_id, status)
            assert ("Retry-After" in headers) == (status == "429"), (operation_id, status)


def test_a_304_declares_what_its_200_would_send(contract: dict[str, Any]) -> None:
    conditional = [op for op in operations(contract) if "304" in op[1]["responses"]]
    assert conditional
    for operation_id, operation in conditional:
        headers = operation["responses"]["304"]["headers"]
        assert {"ETag", "Cache-Control", "Vary"} <= set(headers), operation_id


def test_every_401_names_what_its_operation_takes(contract: dict[str, Any]) -> None:
    unauthorized = [op for op in operations(contract) if "401" in op[1]["responses"]]
    assert len(unauthorized) > 20
    for operation_id, operation in unauthorized:
        response = operation["responses"]["401"]
        challenge = response["headers"]["WWW-Authenticate"]
        assert challenge["required"] is True, operation_id
        schemes = {scheme for way in operation.get("security", []) for scheme in way}
        assert schemes, f"{operation_id} answers 401 but takes no credentials"
        for scheme in schemes:
            assert CREDENTIALS[scheme] in response["description"], (operation_id, scheme)
            assert CHALLENGES[scheme] in challenge["description"], (operation_id, scheme)
        if schemes == {"appKey"}:
            assert "seat" not in response["description"], operation_id


def test_a_stale_moves_409_declares_its_etag(contract: dict[str, Any]) -> None:
    submit = dict(operations(contract))["submitAction"]
    assert "ETag" in submit["responses"]["409"]["headers"]


def test_every_list_pages_by_cursor_with_a_null_end(contract: dict[str, Any]) -> None:
    """Every answer with a next page names it ``next_cursor`` (null on the last page) and
    its operation takes it back as ``cursor``."""
    schemas = contract["components"]["schemas"]
    paged = 0
    for operation_id, operation in operations(contract):
        content = operation["responses"].get("200", {}).get("content", {})
        ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
        properties = schemas.get(ref.rpartition("/")[2], {}).get("properties", {})
        if not {"next_cursor", "next_after"} & set(properties):
            continue
        paged += 1
        assert properties["next_cursor"]["oneOf"][1] == {"type": "null"}, operation_id
        parameters = {p["name"]: p for p in operation["parameters"]}
        assert parameters["cursor"]["schema"]["type"] == "string", operation_id
        if "after" in parameters:  # the old style, kept for a release
            assert parameters["after"]["schema"]["deprecated"] is True, operation_id
    assert paged == 3  # tables, a match's events, a subscription's deliveries


def test_every_moment_is_a_date_time(contract: dict[str, Any]) -> None:
    def moments(node: Any, where: str) -> list[tuple[str, Any]]:
        found = []
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                found += [
                    (f"{where}.{name}", schema)
                    for name, schema in properties.items()
                    if name.endswith("_at") or name == "timestamp"
                ]
            for key, value in node.items():
                found += moments(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                found += moments(value, f"{where}/{index}")
        return found

    found = moments(contract, "")
    assert len(found) > 8
    for where, schema in found:
        kinds = schema.get("oneOf", [schema])
        assert {"type": "string", "format": "date-time"} in kinds, where
