"""Breaking changes between two OpenAPI documents: what a client written against the older one
would find broken in the newer one, so that the contract's version says so (its policy is in
the README). Pure: two documents in, a list of findings out.

A request must still be accepted as it was (so nothing a client sends may be narrowed, become
required or disappear), and an answer must still be read as it was (so nothing a client reads
may disappear, become optional or take values it did not before). Webhooks are answers in this
sense: the server sends them and subscribers read them."""

from __future__ import annotations

from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

REQUEST = "request"
RESPONSE = "response"
"""The direction a schema flows in: sent by the client (a request) or read by it."""

NARROWING_BOUNDS = {
    "minimum": 1,
    "exclusiveMinimum": 1,
    "minLength": 1,
    "minItems": 1,
    "minProperties": 1,
    "maximum": -1,
    "exclusiveMaximum": -1,
    "maxLength": -1,
    "maxItems": -1,
    "maxProperties": -1,
}
"""Each bound, and which way moving it narrows what it admits (1: up, -1: down)."""


def breaking_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every change from ``old`` to ``new`` that breaks a client of ``old``, one line each."""
    diff = _Diff(old, new)
    old_ops, new_ops = _operations(old), _operations(new)
    for key, old_op in old_ops.items():
        new_op = new_ops.get(key)
        if new_op is None:
            diff.found(key, "the operation was removed")
            continue
        diff.operation(key, old_op, new_op)
    for name, old_item in (old.get("webhooks") or {}).items():
        new_item = (new.get("webhooks") or {}).get(name, {})
        for method in METHODS:
            if method not in old_item:
                continue
            where = f"webhook {name}"
            if method not in new_item:
                diff.found(where, "the webhook is no longer sent")
                continue
            old_body = _content_schema(diff.old, old_item[method].get("requestBody"))
            new_body = _content_schema(diff.new, new_item[method].get("requestBody"))
            if old_body is not None and new_body is not None:
                diff.schema(f"{where} body", old_body, new_body, RESPONSE)
    return diff.findings


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every operation by ``METHOD path``, with the document's security where it has none."""
    default_security = document.get("security")
    found = {}
    for path, item in (document.get("paths") or {}).items():
        shared = item.get("parameters", [])
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            operation = {
                **operation,
                "parameters": [*shared, *operation.get("parameters", [])],
            }
            operation.setdefault("security", default_security)
            found[f"{method.upper()} {path}"] = operation
    return found


def _content_schema(document: dict[str, Any], holder: Any) -> Any:
    """The JSON schema of a request body or response (its first JSON-like medium)."""
    holder = _resolve(document, holder)
    if not isinstance(holder, dict):
        return None
    content = holder.get("content") or {}
    for media_type, medium in content.items():
        if "json" in media_type and isinstance(medium, dict) and "schema" in medium:
            return medium["schema"]
    return None


def _resolve(document: dict[str, Any], node: Any) -> Any:
    """``node`` with its local ``$ref`` followed (repeatedly)."""
    seen = set()
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen or not ref.startswith("#/"):
            return node
        seen.add(ref)
        target: Any = document
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                return node
            target = target[part]
        extra = {key: value for key, value in node.items() if key != "$ref"}
        node = {**target, **extra} if extra and isinstance(target, dict) else target
    return node


def _types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema admits (None: any), ``integer`` within ``number``."""
    if "const" in schema:
        return {_json_type(schema["const"])}
    declared = schema.get("type")
    if declared is None and "enum" in schema:
        return {_json_type(value) for value in schema["enum"]}
    if declared is None:
        return None
    kinds = set(declared) if isinstance(declared, list) else {declared}
    if schema.get("nullable"):
        kinds.add("null")
    return kinds


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _admits(kinds: set[str], kind: str) -> bool:
    return kind in kinds or (kind == "integer" and "number" in kinds)


def _values(schema: dict[str, Any]) -> list[Any] | None:
    """The closed set of values a schema admits, if it has one (``enum``, ``const``)."""
    if "const" in schema:
        return [schema["const"]]
    if "enum" in schema:
        return list(schema["enum"])
    return None


def _variants(schema: dict[str, Any]) -> list[Any] | None:
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return list(schema[key])
    return None


class _Diff:
    def __init__(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.old, self.new = old, new
        self.findings: list[str] = []
        self._compared: set[tuple[str, str, str]] = set()

    def found(self, where: str, what: str) -> None:
        self.findings.append(f"{where}: {what}")

    def operation(self, key: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._security(key, old.get("security"), new.get("security"))
        self._parameters(key, old["parameters"], new["parameters"])
        old_body = _resolve(self.old, old.get("requestBody"))
        new_body = _resolve(self.new, new.get("requestBody"))
        if new_body and new_body.get("required") and not (old_body or {}).get("required"):
            self.found(key, "the request body became required")
        old_schema = _content_schema(self.old, old_body)
        new_schema = _content_schema(self.new, new_body)
        if old_schema is not None and new_schema is not None:
            self.schema(f"{key} body", old_schema, new_schema, REQUEST)
        elif old_schema is not None and new_body is None:
            self.found(key, "the request body is no longer accepted")
        new_responses = new.get("responses") or {}
        for status, old_response in (old.get("responses") or {}).items():
            if status not in new_responses:
                self.found(key, f"the {status} response was removed")
                continue
            self._response(f"{key} {status}", old_response, new_responses[status])

    def _security(self, key: str, old: Any, new: Any) -> None:
        """Tightened when a way of calling that was enough before is not now."""
        if new is None:
            return
        old_ways = [set(way) for way in (old if old is not None else [{}])]
        new_ways = [set(way) for way in new]
        for way in old_ways:
            if not any(needed <= way for needed in new_ways):
                sent = " + ".join(sorted(way)) or "no credentials"
                self.found(key, f"security tightened: {sent} is no longer enough")

    def _parameters(self, key: str, old: list[Any], new: list[Any]) -> None:
        def by_place(document: dict[str, Any], items: list[Any]) -> dict[tuple[str, str], Any]:
            resolved = [_resolve(document, item) for item in items]
            return {
                (item["in"], item["name"].lower() if item["in"] == "header" else item["name"]): item
                for item in resolved
                if isinstance(item, dict) and "name" in item and "in" in item
            }

        old_params, new_params = by_place(self.old, old), by_place(self.new, new)
        for place, parameter in new_params.items():
            if parameter.get("required") and not (old_params.get(place) or {}).get("required"):
                self.found(key, f"{place[0]} parameter {place[1]!r} is required now")
        for place, parameter in old_params.items():
            if place not in new_params:
                if place[0] != "header":  # an unknown header is ignored, not refused
                    self.found(key, f"{place[0]} parameter {place[1]!r} was removed")
                continue
            if "schema" in parameter and "schema" in new_params[place]:
                self.schema(
                    f"{key} {place[0]} parameter {place[1]!r}",
                    _never_null(self.old, parameter["schema"]),
                    _never_null(self.new, new_params[place]["schema"]),
                    REQUEST,
                )

    def _response(self, where: str, old: Any, new: Any) -> None:
        old, new = _resolve(self.old, old), _resolve(self.new, new)
        new_headers = {name.lower(): value for name, value in (new.get("headers") or {}).items()}
        for name in old.get("headers") or {}:
            if name.lower() not in new_headers:
                self.found(where, f"the {name} header is no longer declared")
        old_schema, new_schema = _content_schema(self.old, old), _content_schema(self.new, new)
        if old_schema is not None and new_schema is not None:
            self.schema(where, old_schema, new_schema, RESPONSE)
        elif old_schema is not None:
            self.found(where, "the response no longer has a JSON body")

    def schema(self, where: str, old: Any, new: Any, direction: str) -> None:
        """Compare two schemas at one place of a request or an answer, refs resolved."""
        refs = (str(_ref_of(old)), str(_ref_of(new)), direction)
        if refs[0] != "None" and refs[1] != "None":
            if refs in self._compared:
                return  # compared already (and recursive schemas end here)
            self._compared.add(refs)
        named = (old, new)  # a union's member is named after its reference
        old, new = _resolve(self.old, old), _resolve(self.new, new)
        if not isinstance(old, dict) or not isinstance(new, dict):
            if old is not new and old is True and new is not True and direction == REQUEST:
                self.found(where, "the value is constrained now")
            return
        request = direction == REQUEST
        old_variants, new_variants = _variants(old), _variants(new)
        if old_variants is not None or new_variants is not None:
            old_members = _members(named[0] if old_variants is None else old, old_variants)
            new_members = _members(named[1] if new_variants is None else new, new_variants)
            self._union(where, old_members, new_members, direction)
            return
        self._kinds(where, old, new, request)
        self._enums(where, old, new, request)
        if request:
            self._bounds(where, old, new)
        self._object(where, old, new, request)
        if isinstance(old.get("items"), dict) and isinstance(new.get("items"), dict):
            self.schema(f"{where}[]", old["items"], new["items"], direction)

    def _union(
        self,
        where: str,
        old_members: dict[str, Any],
        new_members: dict[str, Any],
        direction: str,
    ) -> None:
        """A request's union may not lose a member, an answer's may not gain one: members are
        paired by name (their ``$ref``) and compared, else one is kept if a member of the other
        side takes it in with no finding (else the closest one's findings tell why not)."""
        if direction == REQUEST:
            kept, other, said = old_members, new_members, "no longer accepts"
        else:
            kept, other, said = new_members, old_members, "may now answer"
        for name, schema in kept.items():
            if name in other:
                pair = (schema, other[name]) if direction == REQUEST else (other[name], schema)
                self.schema(f"{where} ({name})", *pair, direction)
                continue
            trials = {
                candidate: self._trial(wider, schema, direction)
                for candidate, wider in other.items()
            }
            if all(trials.values()):
                closest = min(trials, key=lambda candidate: len(trials[candidate]))
                why = trials[closest][0].lstrip(": ").split(" (as ")[0]
                more = "; ..." if len(trials[closest]) > 1 else ""
                said_why = "" if why == f"{said} {name}" else f" (as {closest}: {why}{more})"
                self.found(where, f"{said} {name}{said_why}")

    def _trial(self, wider: Any, narrower: Any, direction: str) -> list[str]:
        """What keeps ``wider`` from taking in all of ``narrower`` (compared apart)."""
        trial = _Diff(self.old, self.new)
        if direction == REQUEST:
            trial.schema("", narrower, wider, REQUEST)
        else:
            trial.schema("", wider, narrower, RESPONSE)
        return trial.findings

    def _kinds(self, where: str, old: dict[str, Any], new: dict[str, Any], request: bool) -> None:
        old_kinds, new_kinds = _types(old), _types(new)
        if request and new_kinds is not None:
            lost = sorted(k for k in old_kinds or {"any type"} if not _admits(new_kinds, k))
            if lost:
                self.found(where, f"no longer accepts {' or '.join(lost)}")
        if not request and old_kinds is not None:
            gained = sorted(k for k in new_kinds or {"any type"} if not _admits(old_kinds, k))
            if gained:
                self.found(where, f"may now be {' or '.join(gained)}")

    def _enums(self, where: str, old: dict[str, Any], new: dict[str, Any], request: bool) -> None:
        old_values, new_values = _values(old), _values(new)
        if request and new_values is not None:
            if old_values is None:
                self.found(where, "only a closed set of values is accepted now")
            else:
                lost = [value for value in old_values if value not in new_values]
                if lost:
                    self.found(where, f"no longer accepts {_listed(lost)}")
        if not request and old_values is not None:
            gained = [value for value in new_values or ["any value"] if value not in old_values]
            if gained:
                self.found(where, f"may now answer {_listed(gained)}")

    def _bounds(self, where: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        for bound, narrowing in NARROWING_BOUNDS.items():
            if bound not in new or isinstance(new[bound], bool):
                continue
            if bound not in old or (new[bound] - old[bound]) * narrowing > 0:
                self.found(where, f"{bound} narrowed to {new[bound]}")
        if "pattern" in new and new["pattern"] != old.get("pattern"):
            self.found(where, f"must match the pattern {new['pattern']!r} now")
        if "format" in new and new["format"] != old.get("format"):
            self.found(where, f"must be a {new['format']} now")

    def _object(self, where: str, old: dict[str, Any], new: dict[str, Any], request: bool) -> None:
        old_props = old.get("properties") or {}
        new_props = new.get("properties") or {}
        old_required, new_required = set(old.get("required", [])), set(new.get("required", []))
        if request:
            for name in sorted(new_required - old_required):
                self.found(where, f"field {name!r} is required now")
            if new.get("additionalProperties") is False:
                for name in sorted(set(old_props) - set(new_props)):
                    self.found(where, f"field {name!r} was removed")
        else:
            for name in sorted(old_required - new_required):
                self.found(
                    where,
                    f"field {name!r} "
                    + ("was removed" if name not in new_props else "is optional now"),
                )
            for name in sorted(set(old_props) - set(new_props) - old_required):
                self.found(where, f"field {name!r} was removed")
        direction = REQUEST if request else RESPONSE
        for name in sorted(set(old_props) & set(new_props)):
            self.schema(f"{where}.{name}", old_props[name], new_props[name], direction)


def _never_null(document: dict[str, Any], schema: Any) -> Any:
    """A parameter's schema without its ``null`` (a parameter is absent or a value: some
    generators write an optional one as a union with null)."""
    schema = _resolve(document, schema)
    variants = _variants(schema) if isinstance(schema, dict) else None
    if variants is None:
        return schema
    kept = [v for v in variants if not (isinstance(v, dict) and _types(v) == {"null"})]
    if len(kept) == 1:
        others = {k: v for k, v in schema.items() if k not in ("oneOf", "anyOf")}
        return {**others, **_resolve(document, kept[0])}
    return schema


def _ref_of(schema: Any) -> str | None:
    return schema.get("$ref") if isinstance(schema, dict) else None


def _members(schema: dict[str, Any], variants: list[Any] | None) -> dict[str, Any]:
    """A union's members by name (its ``$ref``'s last part, else its place); a schema that is
    not a union is its own only member."""
    named = {}
    for index, variant in enumerate([schema] if variants is None else variants):
        name = _ref_of(variant)
        if name is None:
            kinds = _types(variant) if isinstance(variant, dict) else None
            name = " or ".join(sorted(kinds)) if kinds else f"option {index + 1}"
        named.setdefault(name.rpartition("/")[2], variant)
    return named


def _listed(values: list[Any]) -> str:
    return ", ".join(repr(value) for value in values)


def version_says_so(released: str, current: str) -> bool:
    """Whether ``current`` is a breaking release after ``released`` (semver: the major goes
    up; while the major is 0, the minor)."""
    old, new = _semver(released), _semver(current)
    if old[0] == 0 and new[0] == 0:
        return new[1] > old[1]
    return new[0] > old[0]


def _semver(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in version.split("-")[0].split(".")[:3])
    return major, minor, patch


def release_verdict(released: dict[str, Any], current: dict[str, Any]) -> tuple[list[str], bool]:
    """The breaking changes from the last released contract to the current one, and whether
    the current one's ``info.version`` says so (no breaking change: any version not older)."""
    findings = breaking_changes(released, current)
    old, new = released["info"]["version"], current["info"]["version"]
    if findings:
        return findings, version_says_so(old, new)
    return findings, _semver(new) >= _semver(old)


def newest(versions: list[str]) -> str:
    """The highest of semver ``versions`` (the released files' names)."""
    return max(versions, key=_semver)
