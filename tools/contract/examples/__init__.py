"""An example on every request body and response of the contract, made by running the code.

The game data come from a two-player Hanabi match that the rules engine plays in-process from a
fixed seed, answered as the rules service answers the match service. The bodies are the
services' own Structs encoded by msgspec, so a schema change breaks the examples here instead of
letting them drift; the problems are the ones each route raises, in its words. Ids, times and
secrets are fixed (the secrets visibly fake), so the contract is the same on every build.

The modules: ``values`` (the fixed ids, times and fakes), ``match`` (the Hanabi match),
``story`` (what the services show of it), ``bodies`` (requests and successful answers) and
``problems`` (the problem answers); ``add_examples`` here sets them on the contract.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from shared.edge.errors import PROBLEM_MEDIA_TYPE, Problem, ProblemDocument
from tools.contract.examples.bodies import request_examples, response_examples
from tools.contract.examples.problems import API_KEY_PROBLEMS, generic_problem, problem_examples
from tools.contract.examples.story import Story
from tools.contract.examples.values import ENCODER, MissingExample, example_path

__all__ = ["MissingExample", "add_examples"]


def add_examples(contract: dict[str, Any]) -> None:
    """Set ``example`` on every request body and every response content of ``contract``.

    Raises ``MissingExample`` when a route answers something this module has no example of (a
    route added without one), or when an example belongs to no route any more.
    """
    story = Story()
    requests = request_examples(story)
    responses = response_examples(story)
    problems = problem_examples(story)
    used: set[Any] = set()
    for template, operation in _operations(contract):
        operation_id = operation["operationId"]
        keyed = any(
            "appKey" in requirement or "operatorKey" in requirement
            for requirement in operation.get("security", [])
        )
        for media in operation.get("requestBody", {}).get("content", {}).values():
            media["example"] = _builtins(_example(requests, operation_id, used))
        for status, response in operation["responses"].items():
            for media_type, media in response.get("content", {}).items():
                key = (operation_id, int(status))
                if media_type == PROBLEM_MEDIA_TYPE:
                    example = _problem(problems, key, template, used, keyed=keyed)
                else:
                    example = _example(responses, key, used)
                media["example"] = _builtins(example)
    unused = [key for table in (requests, responses, problems) for key in table if key not in used]
    if unused:
        raise MissingExample(f"examples of no route in the contract: {unused}")


def _operations(contract: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in contract["paths"].items():
        for operation in item.values():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, operation


def _example(examples: dict[Any, Any], key: Any, used: set[Any]) -> Any:
    if key not in examples:
        raise MissingExample(f"no example for {key}: add one in tools/contract/examples/")
    used.add(key)
    return examples[key]


def _problem(
    problems: dict[tuple[str, int], Problem | ProblemDocument],
    key: tuple[str, int],
    template: str,
    used: set[Any],
    *,
    keyed: bool,
) -> ProblemDocument:
    """The route's own problem for the status, else what any route answers with it (a route
    taking an API key: its 401 and 403 are the key's)."""
    if key in problems:
        problem = _example(problems, key, used)
    elif keyed and key[1] in API_KEY_PROBLEMS:
        problem = API_KEY_PROBLEMS[key[1]]
    else:
        problem = generic_problem(key, template)
    if isinstance(problem, ProblemDocument):
        return problem
    return problem.document(instance=example_path(template))


def _builtins(example: Any) -> Any:
    """The example as JSON carries it: encoded by msgspec as the services encode it."""
    return msgspec.json.decode(ENCODER.encode(example))
