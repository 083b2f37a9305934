"""The breaking-change check: each kind of break on small documents, and the contract's own
version against the newest released contract."""

from __future__ import annotations

import copy
import json
from typing import Any

from services.operator.cli import CONTRACT_PATH, RELEASED_DIR
from tools.contract.diff import breaking_changes, newest, release_verdict

OBJECT = {"type": "object", "additionalProperties": False}


def document(**changes: Any) -> dict[str, Any]:
    """A contract of one operation, ``POST /things``, its body and answer ``Thing``."""
    base: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1.0.0"},
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "security": [{"appKey": []}, {}],
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                    ],
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/New"}}
                        }
                    },
                    "responses": {
                        "201": {
                            "description": "made",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Thing"}
                                }
                            },
                        },
                        "404": {"description": "no"},
                    },
                }
            }
        },
        "components": {
            "schemas": {
                "New": {
                    **OBJECT,
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "maxLength": 10},
                        "color": {"type": "string", "enum": ["red", "blue"]},
                        "size": {"type": "number"},
                    },
                },
                "Thing": {
                    **OBJECT,
                    "required": ["id", "state"],
                    "properties": {
                        "id": {"type": "string"},
                        "state": {"type": "string", "enum": ["new", "old"]},
                        "note": {"type": "string"},
                        "kind": {"$ref": "#/components/schemas/Kind"},
                    },
                },
                "Kind": {"oneOf": [{"$ref": "#/components/schemas/A"}]},
                "A": {**OBJECT, "properties": {"a": {"type": "integer"}}},
                "B": {**OBJECT, "properties": {"b": {"type": "integer"}}},
            }
        },
    }
    changed = copy.deepcopy(base)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = changed
        for part in parents:
            node = node[part.replace("_SLASH_", "/")]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return changed


OPERATION = "paths___SLASH_things__post"
SCHEMAS = "components__schemas"


def breaks(**changes: Any) -> list[str]:
    return breaking_changes(document(), document(**changes))


def test_the_same_document_breaks_nothing() -> None:
    assert breaking_changes(document(), document()) == []


def test_a_removed_operation_or_response_breaks() -> None:
    assert breaks(paths={}) == ["POST /things: the operation was removed"]
    assert breaks(**{f"{OPERATION}__responses__404": None}) == [
        "POST /things: the 404 response was removed"
    ]


def test_a_parameter_required_or_removed_or_narrowed_breaks() -> None:
    required = [{"name": "limit", "in": "query", "required": True, "schema": {"type": "integer"}}]
    assert breaks(**{f"{OPERATION}__parameters": required}) == [
        "POST /things: query parameter 'limit' is required now"
    ]
    assert breaks(**{f"{OPERATION}__parameters": []}) == [
        "POST /things: query parameter 'limit' was removed"
    ]
    bounded = [{"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 5}}]
    assert breaks(**{f"{OPERATION}__parameters": bounded}) == [
        "POST /things query parameter 'limit': maximum narrowed to 5"
    ]
    optional_header = {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}
    assert breaks(**{f"{OPERATION}__parameters": [optional_header]}) == [
        "POST /things: query parameter 'limit' was removed"
    ]


def test_a_request_field_required_removed_or_narrowed_breaks() -> None:
    assert breaks(**{f"{SCHEMAS}__New__required": ["name", "size"]}) == [
        "POST /things body: field 'size' is required now"
    ]
    assert breaks(**{f"{SCHEMAS}__New__properties__size": None}) == [
        "POST /things body: field 'size' was removed"
    ]
    assert breaks(**{f"{SCHEMAS}__New__properties__size": {"type": "integer"}}) == [
        "POST /things body.size: no longer accepts number"
    ]
    assert breaks(**{f"{SCHEMAS}__New__properties__name": {"type": "string", "maxLength": 5}}) == [
        "POST /things body.name: maxLength narrowed to 5"
    ]
    # widening is fine: a longer name, any number as an integer was
    assert breaks(**{f"{SCHEMAS}__New__properties__name": {"type": "string"}}) == []


def test_a_request_enum_value_removed_breaks_one_added_does_not() -> None:
    assert breaks(**{f"{SCHEMAS}__New__properties__color__enum": ["red"]}) == [
        "POST /things body.color: no longer accepts 'blue'"
    ]
    assert breaks(**{f"{SCHEMAS}__New__properties__color__enum": ["red", "blue", "green"]}) == []


def test_a_response_field_removed_or_optional_or_wider_breaks() -> None:
    assert breaks(**{f"{SCHEMAS}__Thing__required": ["id"]}) == [
        "POST /things 201: field 'state' is optional now"
    ]
    assert breaks(**{f"{SCHEMAS}__Thing__properties__note": None}) == [
        "POST /things 201: field 'note' was removed"
    ]
    assert breaks(**{f"{SCHEMAS}__Thing__properties__id": {"type": ["string", "null"]}}) == [
        "POST /things 201.id: may now be null"
    ]
    # a new optional field in an answer is fine
    assert breaks(**{f"{SCHEMAS}__Thing__properties__extra": {"type": "string"}}) == []


def test_a_value_added_to_a_closed_enum_of_an_answer_breaks() -> None:
    assert breaks(**{f"{SCHEMAS}__Thing__properties__state__enum": ["new", "old", "gone"]}) == [
        "POST /things 201.state: may now answer 'gone'"
    ]
    assert breaks(**{f"{SCHEMAS}__Thing__properties__state__enum": ["new"]}) == []
    untyped = {"enum": ["new", "old"]}  # an enum's values say its type
    assert breaks(**{f"{SCHEMAS}__Thing__properties__state": untyped}) == []


def test_a_member_added_to_an_answers_union_breaks() -> None:
    members = [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]
    assert breaks(**{f"{SCHEMAS}__Kind__oneOf": members}) == [
        "POST /things 201.kind: may now answer B (as A: field 'a' was removed)"
    ]


def test_a_member_lost_from_a_requests_union_breaks() -> None:
    union = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    old = document(**{f"{SCHEMAS}__New__properties__size": union})
    assert breaking_changes(old, document(**{f"{SCHEMAS}__New__properties__size": union})) == []
    narrowed = document(**{f"{SCHEMAS}__New__properties__size": {"type": "integer"}})
    assert breaking_changes(old, narrowed) == ["POST /things body.size: no longer accepts string"]


def test_tightened_security_breaks() -> None:
    assert breaks(**{f"{OPERATION}__security": [{"appKey": []}]}) == [
        "POST /things: security tightened: no credentials is no longer enough"
    ]
    assert breaks(**{f"{OPERATION}__security": [{"appKey": [], "seat": []}]}) == [
        "POST /things: security tightened: appKey is no longer enough",
        "POST /things: security tightened: no credentials is no longer enough",
    ]
    assert breaks(**{f"{OPERATION}__security": [{}]}) == []


def test_recursive_schemas_end() -> None:
    tree = {**OBJECT, "properties": {"child": {"$ref": "#/components/schemas/Thing"}}}
    old = document(**{f"{SCHEMAS}__Thing": tree})
    assert breaking_changes(old, copy.deepcopy(old)) == []


def test_the_version_must_announce_a_break() -> None:
    old = document()
    broken = document(**{f"{SCHEMAS}__Thing__required": ["id"]})
    assert release_verdict(old, broken)[1] is False
    broken["info"]["version"] = "1.1.0"
    assert release_verdict(old, broken)[1] is False
    broken["info"]["version"] = "2.0.0"
    assert release_verdict(old, broken)[1] is True
    old["info"]["version"], broken["info"]["version"] = "0.1.0", "0.2.0"  # 0.x: the minor
    assert release_verdict(old, broken)[1] is True
    old["info"]["version"] = "0.2.0"
    assert release_verdict(old, broken)[1] is False
    assert newest(["0.1.0", "0.10.0", "0.2.0"]) == "0.10.0"


def test_the_contract_announces_its_breaking_changes() -> None:
    """The CI check: the committed contract against the newest released one."""
    released = newest([path.stem for path in RELEASED_DIR.glob("*.json")])
    baseline = json.loads((RELEASED_DIR / f"{released}.json").read_text())
    current = json.loads(CONTRACT_PATH.read_text())
    assert baseline["info"]["version"] == released
    findings, announced = release_verdict(baseline, current)
    assert announced, (
        f"the contract breaks clients of {released} but its version"
        f" {current['info']['version']} does not say so (bump the major; the minor while 0.x,"
        " and write it in openapi/CHANGELOG.md):\n" + "\n".join(findings)
    )
