"""Helpers every part of the contract's making uses on JSON Schemas: operations by id, schemas
renamed and made generator-friendly (``pointed_schema``), and components added without ever
replacing another one silently."""

from __future__ import annotations

from typing import Any

import msgspec

from shared.edge.contract import COMPONENT_REF


def operations_by_id(contract: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every operation of the contract by its id."""
    return {
        operation["operationId"]: operation
        for item in contract["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    }


def add_union(components: dict[str, Any], name: str, union: Any) -> None:
    """A tagged union of Structs as one named schema (msgspec names only its members)."""
    (root,), named = msgspec.json.schema_components([union], ref_template=COMPONENT_REF)
    for member, schema in named.items():
        add_unique(components, {member: schema})
    add_unique(components, {name: pointed_schema(root, {})})


def pointed_schema(schema: Any, refs: dict[str, str]) -> Any:
    """``schema`` with its references renamed by ``refs``, each tagged union (msgspec's
    ``anyOf`` with a discriminator) a ``oneOf`` (its tags exclude each other), and no boolean
    schema where generated clients fail on one."""
    if isinstance(schema, list):
        return [pointed_schema(item, refs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    pointed: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "$ref":
            pointed[key] = refs.get(value, value)
        elif key == "discriminator":
            mapping = {tag: refs.get(ref, ref) for tag, ref in value.get("mapping", {}).items()}
            pointed[key] = {**value, "mapping": mapping} if mapping else value
        else:
            pointed[key] = pointed_schema(value, refs)
    if "discriminator" in pointed and "anyOf" in pointed:
        pointed["oneOf"] = pointed.pop("anyOf")
    if "$ref" in pointed:  # ``documented_as``: msgspec keeps the type it refines beside it
        pointed.pop("type", None)
    if pointed.get("items") is False and pointed.get("maxItems") == len(pointed["prefixItems"]):
        del pointed["items"]  # a fixed-size tuple: redundant, and clients choke on ``false``
    return pointed


def add_unique(components: dict[str, Any], added: dict[str, Any]) -> None:
    """Generated names must never silently replace another schema."""
    for name, schema in added.items():
        if name in components and components[name] != schema:
            raise ValueError(f"two schemas are both named {name!r}")
        components[name] = schema
