"""Every request body and response of the contract carries an example
(``tools/contract/examples/``) that its schema accepts, with game data tagged as the games'
real Structs."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any, NamedTuple
from urllib.parse import quote

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from services.rules.games import load_games
from services.rules.games.contract import struct_tags
from shared.domain.messages import TableEvent
from tools.contract import GAME_DATA, build_contract, game_prefix
from tools.contract.examples import MissingExample, add_examples

CONTRACT_URI = "urn:contract"
EVENT_STREAM = "text/event-stream"
GAMES = load_games()


def data_components() -> dict[str, set[str]]:
    """The components that document game data, each with the tags its values may carry: the
    unions over the games (``GameAction``) and each game's own (``HanabiAction``)."""
    tags: dict[str, set[str]] = {}
    for union, (kind, attribute) in GAME_DATA.items():
        tags[union] = set()
        for game in GAMES.values():
            game_tags = set(struct_tags(getattr(game, attribute)))
            tags[game_prefix(game) + kind] = game_tags
            tags[union] |= game_tags
    return tags


DATA_TAGS = data_components()
STORED_EVENT_NAMES = set().union(*(struct_tags(game.event_type) for game in GAMES.values()))
"""What a match feed's ``event:`` names: the stored event's type (its ``data`` is redacted)."""


class Contract:
    """The contract as one JSON Schema resource, so that a schema anywhere in it resolves its
    ``#/components/...`` references against the whole document."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource = Resource(contents=document, specification=DRAFT202012)
        self.registry = Registry().with_resource(CONTRACT_URI, resource)

    def uri(self, pointer: str) -> str:
        return f"{CONTRACT_URI}#{quote(pointer, safe='/~')}"

    def schema(self, pointer: str) -> Any:
        return self.registry.resolver().lookup(self.uri(pointer)).contents

    def validator(self, pointer: str) -> Draft202012Validator:
        return Draft202012Validator(
            {"$ref": self.uri(pointer)},
            registry=self.registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )


class Content(NamedTuple):
    """One request body or response content: where it is, whose it is, and its media object."""

    pointer: str
    operation_id: str
    answer: str
    """``request`` or the response's status."""
    media_type: str
    media: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.operation_id} {self.answer} {self.media_type}"


def escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def contents(contract: dict[str, Any]) -> Iterator[Content]:
    for path, item in contract["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            at = f"/paths/{escape(path)}/{method}"
            operation_id = operation["operationId"]
            for media_type, media in operation.get("requestBody", {}).get("content", {}).items():
                pointer = f"{at}/requestBody/content/{escape(media_type)}"
                yield Content(pointer, operation_id, "request", media_type, media)
            for status, response in operation["responses"].items():
                for media_type, media in response.get("content", {}).items():
                    pointer = f"{at}/responses/{status}/content/{escape(media_type)}"
                    yield Content(pointer, operation_id, status, media_type, media)


@pytest.fixture(scope="module")
def contract() -> dict[str, Any]:
    built = build_contract()
    if not any("example" in content.media for content in contents(built)):
        add_examples(built)  # until build_contract adds them itself
    return built


@pytest.fixture(scope="module")
def resource(contract: dict[str, Any]) -> Contract:
    return Contract(contract)


def test_every_request_body_and_response_content_has_an_example(
    contract: dict[str, Any],
) -> None:
    every = list(contents(contract))
    assert len(every) > 100
    assert [str(content) for content in every if "example" not in content.media] == []


def test_every_example_is_valid_against_its_schema(resource: Contract) -> None:
    invalid = []
    for content in contents(resource.document):
        if "schema" not in content.media:
            continue
        validator = resource.validator(f"{content.pointer}/schema")
        example = content.media["example"]
        # a stream's schema describes each of its events (OpenAPI 3.1 has no item schema)
        shown = feed_messages(example)[1:] if content.media_type == EVENT_STREAM else [example]
        for instance in shown:
            error = best_match(validator.iter_errors(instance))
            if error is not None:
                invalid.append(f"{content}: {error.message} at {error.json_path}")
    assert invalid == []


def game_data(resource: Contract, instance: Any, pointer: str) -> Iterator[tuple[str, Any]]:
    """Each value in ``instance`` that the schema at ``pointer`` documents as game data, with
    the component documenting it; of a ``oneOf``/``anyOf``, only the options it matches."""
    if instance is None:
        return
    schema = resource.schema(pointer)
    if "$ref" in schema:
        name = schema["$ref"].rpartition("/")[2]
        if name in DATA_TAGS:
            yield name, instance
        else:
            yield from game_data(resource, instance, schema["$ref"].removeprefix("#"))
        return
    for keyword in ("oneOf", "anyOf"):
        for number in range(len(schema.get(keyword, []))):
            option = f"{pointer}/{keyword}/{number}"
            if resource.validator(option).is_valid(instance):
                yield from game_data(resource, instance, option)
    properties = schema.get("properties", {})
    if isinstance(instance, dict):
        for key, value in instance.items():
            if key in properties:
                yield from game_data(resource, value, f"{pointer}/properties/{escape(key)}")
    if isinstance(instance, list) and "items" in schema:
        for item in instance:
            yield from game_data(resource, item, f"{pointer}/items")


def test_game_data_in_the_examples_are_tagged_as_real_game_structs(resource: Contract) -> None:
    found: dict[str, int] = {}
    untagged = []
    for content in contents(resource.document):
        if "schema" not in content.media or content.media_type == EVENT_STREAM:
            continue
        shown = game_data(resource, content.media["example"], f"{content.pointer}/schema")
        for component, value in shown:
            found[component] = found.get(component, 0) + 1
            if value.get("type") not in DATA_TAGS[component]:
                untagged.append(f"{content}: {value.get('type')!r} is no {component}")
    assert untagged == []
    documented_as = {name.removeprefix("Game") for name in GAME_DATA}
    assert {kind for kind in documented_as if any(name.endswith(kind) for name in found)} == (
        documented_as
    ), f"the examples show no {documented_as} of some kind: {found}"


def feed_messages(text: str) -> list[dict[str, str]]:
    """A Server-Sent Events stream as its messages, each as its fields."""
    blocks = [block for block in text.split("\r\n\r\n") if block]
    return [dict(line.split(": ", 1) for line in block.split("\r\n")) for block in blocks]


FEED_EVENTS = {
    "followMatch": STORED_EVENT_NAMES | {"MatchFinished"},
    "followTable": set(struct_tags(TableEvent)),
}
"""What each feed's ``event:`` may name: a game's stored event (its ``data`` redacted) or the
match's end; a table event of the lobby."""


def test_feed_examples_are_streams_of_the_documented_events(resource: Contract) -> None:
    streams = [c for c in contents(resource.document) if c.media_type == EVENT_STREAM]
    assert {content.operation_id for content in streams} == set(FEED_EVENTS)
    for content in streams:
        response = content.pointer.rpartition("/content/")[0]
        documented = resource.schema(response)["x-sse-events"]
        opening, *messages = feed_messages(content.media["example"])
        assert set(opening) == {"retry"}
        assert messages, f"{content}: no event"
        for message in messages:
            name = message["event"]
            assert name in FEED_EVENTS[content.operation_id]
            assert name in documented
            item = json.loads(message["data"])
            assert (item["version"], item.get("type", name)) == (int(message["id"]), name)
            pointer = f"{response}/x-sse-events/{escape(name)}"
            resource.validator(pointer).validate(item)
            for component, value in game_data(resource, item, pointer):
                assert value["type"] in DATA_TAGS[component]


def test_the_examples_are_the_same_on_every_build(contract: dict[str, Any]) -> None:
    again = copy.deepcopy(contract)
    add_examples(again)
    assert again == contract


def test_a_route_without_an_example_breaks_the_build(contract: dict[str, Any]) -> None:
    added = copy.deepcopy(contract)
    added["paths"]["/brand-new"] = {
        "get": {
            "operationId": "brandNew",
            "responses": {"200": {"content": {"application/json": {"schema": {}}}}},
        }
    }
    with pytest.raises(MissingExample, match="brandNew"):
        add_examples(added)
    conflicting = copy.deepcopy(contract)
    conflicting["paths"]["/games/{game}"]["get"]["responses"]["409"] = copy.deepcopy(
        conflicting["paths"]["/games/{game}"]["get"]["responses"]["404"]
    )
    with pytest.raises(MissingExample, match="getGame"):
        add_examples(conflicting)


def test_an_example_of_a_route_gone_breaks_the_build(contract: dict[str, Any]) -> None:
    removed = copy.deepcopy(contract)
    del removed["paths"]["/games/{game}"]
    with pytest.raises(MissingExample, match="getGame"):
        add_examples(removed)
