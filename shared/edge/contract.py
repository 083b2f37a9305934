"""What the services add to the OpenAPI contract Litestar writes: components, security, problems."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated, Any, cast

import msgspec
from litestar.openapi import OpenAPIConfig
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import Components, Reference, Schema, SecurityScheme
from litestar.openapi.spec.enums import OpenAPIFormat, OpenAPIType
from litestar.params import PathParameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition

from shared.domain.messages import MAX_SEATS
from shared.edge.errors import PROBLEM_MEDIA_TYPE, ProblemDocument, challenges_of
from shared.edge.guard import PG_BIGINT_MAX

SeatInPath = Annotated[int, PathParameter(ge=0, le=MAX_SEATS - 1)]
"""A seat's number in a path: one a table can have (whether this one has it is its state)."""

COMPONENT_REF = "#/components/schemas/{name}"
"""Where the contract keeps every named schema (msgspec's ``ref_template``)."""


def component_ref(name: str) -> str:
    return COMPONENT_REF.format(name=name)


def documented_as(component: str) -> msgspec.Meta:
    """Annotation metadata for game data the services pass through as raw JSON, never
    decoding it: the contract documents it with this component, built from the games' Structs
    (``tools/contract/``), so the services need no game code."""
    return msgspec.Meta(extra_json_schema={"$ref": component_ref(component)})


Timestamp = Annotated[
    str,
    msgspec.Meta(extra_json_schema={"format": "date-time"}),
]
"""A moment as the API shows it: an RFC 3339 date-time with its offset (``shared.infra.db.iso``)."""


def _extra_schema(field: FieldDefinition) -> dict[str, Any]:
    for meta in field.metadata:
        if isinstance(meta, msgspec.Meta) and meta.extra_json_schema:
            return meta.extra_json_schema
    return {}


class DocumentedAsPlugin(OpenAPISchemaPlugin):
    """Litestar ignores msgspec's ``extra_json_schema``; this makes ``documented_as`` fields
    references to the component, and a ``Timestamp`` a ``date-time``."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return bool(_extra_schema(field_definition).keys() & {"$ref", "format"})

    def to_openapi_schema(  # type: ignore[override]
        self, field_definition: FieldDefinition, schema_creator: Any
    ) -> Reference | Schema:
        extra = _extra_schema(field_definition)
        if "$ref" in extra:
            return Reference(ref=cast(str, extra["$ref"]))
        return Schema(type=OpenAPIType.STRING, format=OpenAPIFormat(extra["format"]))


def problem_content() -> dict[str, Any]:
    return {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": component_ref("ProblemDocument")}}}


def add_components(schema: dict[str, Any], types: list[Any]) -> None:
    """Add the named schemas of msgspec ``types`` (and of what they refer to) to the contract."""
    _, named = msgspec.json.schema_components(types, ref_template=COMPONENT_REF)
    schema.setdefault("components", {}).setdefault("schemas", {}).update(named)


RATE_LIMITED = "Too many requests from this client (`rate-limited`): retry after `Retry-After`"


def rate_limit_headers(*, limited: bool = False) -> dict[str, Any]:
    """What the rate limiter (``shared/edge/ratelimit.py``) adds to every answer of a public
    operation (while it runs: a deployment may turn it off), and to its 429 ``Retry-After``."""
    headers: dict[str, Any] = {
        "RateLimit-Policy": {
            "description": "The limit of this kind of request (read, write, feed) per client, as"
            ' draft-ietf-httpapi-ratelimit-headers has it: `"write";q=20;w=1` is a bucket of 20'
            " requests that refills in 1 s",
        },
        "RateLimit": {
            "description": 'What is left of it: `"write";r=0;t=1` is no request left, the'
            " bucket full again in 1 s",
        },
    }
    if limited:
        headers["Retry-After"] = {
            "description": "Whole seconds until the client may send a request of this kind again",
            "schema": {"type": "integer", "minimum": 1},
        }
    return headers


NOT_MODIFIED_HEADERS = ("ETag", "Cache-Control", "Vary")
"""What a 304 sends as its 200 would (``conditional``)."""

CREDENTIALS = {
    "seatToken": "a seat's token (`Authorization: Bearer`)",
    "invitationToken": "a private table's invitation (`Authorization: Bearer`)",
    "appKey": "the app's API key (`X-API-Key`)",
    "operatorKey": "the operator's key (`X-API-Key`)",
}


def _document_unauthorized(response: dict[str, Any], security: list[dict[str, Any]] | None) -> None:
    """A 401 names what its operation takes, and declares the challenge it sends."""
    ways = [" and ".join(CREDENTIALS[scheme] for scheme in way) for way in security or [] if way]
    takes = "; or ".join(ways) or "no credentials"
    optional = any(not way for way in security or [])
    response["description"] = (
        f"{'A credential sent is not valid' if optional else 'Credentials missing or not valid'}:"
        f" this operation takes {takes}{' (or none)' if optional else ''}"
    )
    response["headers"]["WWW-Authenticate"] = {
        "description": "The credentials this operation takes, as RFC 9110 challenges: "
        + ", ".join(f"`{challenge}`" for challenge in challenges_of(security)),
        "required": True,
        "schema": {"type": "string"},
    }


def finalize_contract(schema: dict[str, Any]) -> dict[str, Any]:
    """Make every documented error response problem+json (which is what the handlers send),
    document the rate limiter's 429 on every route and its headers on every answer, the
    headers of a 304 and the challenges of a 401, give every header the schema OpenAPI
    requires (ours are strings), and say that no string of a request may hold NUL."""
    add_components(schema, [ProblemDocument])
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _never_null(parameter["schema"])
            responses = operation["responses"]
            responses.setdefault("429", {"description": RATE_LIMITED})
            if operation.get("parameters") or "requestBody" in operation:
                responses.setdefault("400", {"description": "The request is not valid"})
            responses.setdefault("500", {"description": "Internal server error"})
            for status, response in responses.items():
                headers = response.setdefault("headers", {})
                headers.update(rate_limit_headers(limited=status == "429"))
                if status == "304":  # what the 200 would have sent (RFC 9110 §15.4.5)
                    sent = responses.get("200", {}).get("headers", {})
                    headers |= {name: sent[name] for name in NOT_MODIFIED_HEADERS if name in sent}
                if status == "401":
                    _document_unauthorized(response, operation.get("security"))
                for header in headers.values():
                    header.setdefault("schema", {"type": "string"})
                if status.isdigit() and int(status) >= 400:
                    response["content"] = problem_content()
    forbid_nul(schema)  # once parameters are never null (a pattern beside oneOf is kept)
    return schema


NUL_FREE = r"^[^\u0000]*$"
"""The pattern of a string without NUL, which the server refuses in every string of a request
(``check_request``: Postgres text and jsonb cannot hold it)."""
JSON_OBJECT = "JsonObject"
"""The component of a free-form JSON object in a request (table options, a match file)."""


def _json_value(nul_free: dict[str, Any], depth: int) -> dict[str, Any]:
    """A JSON value whose strings hold no NUL: an object is a ``JsonObject`` (generators read
    a model that refers to itself, not a union that does), arrays nest ``depth`` deep."""
    kinds: list[dict[str, Any]] = [
        {"type": "null"},
        {"type": "boolean"},
        {"type": "number"},
        nul_free,
        {"$ref": component_ref(JSON_OBJECT)},
    ]
    if depth:
        kinds.append({"type": "array", "items": _json_value(nul_free, depth - 1)})
    return {"anyOf": kinds}


def forbid_nul(contract: dict[str, Any]) -> None:
    """Every string a request may carry (parameters, bodies, object keys, free-form values)
    without NUL, as the server takes them: a string with a pattern of its own keeps it, and
    gets ``NUL_FREE`` beside it unless it is anchored at both ends (ours then exclude NUL)."""
    components = contract.setdefault("components", {}).setdefault("schemas", {})
    nul_free = {"type": "string", "pattern": NUL_FREE}
    free_form = {"propertyNames": nul_free, "additionalProperties": _json_value(nul_free, 3)}
    components[JSON_OBJECT] = {
        "type": "object",
        "description": "A JSON object whose keys and strings hold no NUL character.",
        **free_form,
    }
    seen = {JSON_OBJECT}
    pending: list[Any] = []
    for path_item in contract.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            pending.extend(parameter["schema"] for parameter in operation.get("parameters", []))
            body = operation.get("requestBody", {}).get("content", {})
            pending.extend(media["schema"] for media in body.values() if "schema" in media)
    while pending:
        schema = pending.pop()
        if isinstance(schema, list):
            pending.extend(schema)
            continue
        if not isinstance(schema, dict):
            continue
        ref = schema.get("$ref", "")
        name = ref.rpartition("/")[2]
        if ref.startswith("#/components/schemas/") and name not in seen:
            seen.add(name)
            pending.append(components[name])
        kinds = schema.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds and not {"enum", "const", "format"} & schema.keys():
            pattern = schema.get("pattern")
            if pattern is None:
                schema["pattern"] = NUL_FREE
            elif not (pattern.startswith("^") and pattern.endswith("$")):
                schema.setdefault("allOf", []).append({"pattern": NUL_FREE})
        if "object" in kinds:
            if not {"properties", "additionalProperties", "patternProperties"} & schema.keys():
                schema.update(free_form)
            elif schema.get("additionalProperties") not in (None, False):
                schema.setdefault("propertyNames", nul_free)
        for key in ("properties", "$defs"):
            pending.extend(schema.get(key, {}).values())
        for key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
            pending.append(schema.get(key))


def _never_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter is absent, never null: Litestar's ``X | None`` puts null in its type and
    enum, which generators turn into a nullable (or duplicated) type."""
    schema = {key: _exact(value) for key, value in schema.items()}
    if isinstance(schema.get("type"), list):
        kept = [kind for kind in schema["type"] if kind != "null"]
        schema["type"] = kept[0] if len(kept) == 1 else kept
    if "enum" in schema:
        schema["enum"] = [value for value in schema["enum"] if value is not None]
    if "oneOf" in schema:
        kept = [option for option in schema["oneOf"] if option.get("type") != "null"]
        if len(kept) == 1:
            del schema["oneOf"]
            schema.update(kept[0])
        else:
            schema["oneOf"] = kept
    return schema


def _exact(bound: Any) -> Any:
    """Litestar writes ``ge``/``le`` bounds as floats: 2**63 - 1 becomes 2**63, which a
    client would then send. Whole numbers become integers again."""
    if not isinstance(bound, float) or not bound.is_integer():
        return bound
    return PG_BIGINT_MAX if bound == float(PG_BIGINT_MAX) else int(bound)


def problem_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """Per-route documentation of the errors it may answer with (bodies are problem+json)."""

    descriptions = {
        400: "The request is not valid",
        401: "A seat token is required",
        403: "The token does not allow this",
        404: "Not found",
        409: "Conflict with the current state",
        422: "Refused by the rules or the resource's state",
        503: "A backing service did not answer",
    }
    return {
        status: ResponseSpec(
            data_container=ProblemDocument,
            description=descriptions[status],
            media_type=PROBLEM_MEDIA_TYPE,
            generate_examples=False,
        )
        for status in statuses
    }


SEAT_TOKEN = [{"seatToken": []}]
"""Routes that need a seat's token."""
OPTIONAL_SEAT_TOKEN = [{}, {"seatToken": []}, {"invitationToken": []}]
"""Routes that answer anyone (anything private: only with its invitation), and answer a seat's
token with what that seat may see."""
OPTIONAL_INVITATION = [{}, {"invitationToken": []}]
"""Routes open to anyone, except for a private table: then only with its invitation token."""
APP_KEY = [{"appKey": []}]
"""Routes a client app calls with its API key, secret or publishable: what it creates is its
own."""
SECRET_KEY = APP_KEY
"""Routes only the app's secret key may call (a publishable key gets 403 `secret-key-required`);
the contract cannot tell the kinds apart, the operation's description says so."""
APP_KEY_AND_INVITATION = [{"appKey": []}, {"appKey": [], "invitationToken": []}]
"""Joining: the table's app's key, and a private table's invitation too."""
SECRET_KEY_OR_SEATED = [{"appKey": []}, {"appKey": [], "seatToken": []}]
"""Bots at an open table: the app's secret key, or a publishable key with the token of a seat
at that table (a browser's player adds or removes bots at their own table)."""
SEATING_A_BOT = [*SECRET_KEY_OR_SEATED, {"appKey": [], "invitationToken": []}]
"""Seating a bot: as ``SECRET_KEY_OR_SEATED``; the secret key at a private table with its
invitation (or a seat's token)."""
SECRET_KEY_OR_FORMER_HOLDER = [{"appKey": []}, {"seatToken": []}, {"appKey": [], "seatToken": []}]
"""Re-seating: the match's app's secret key, or the token the seat had before a bot took it
over (with the app's publishable key, or no key)."""
OPERATOR_KEY = [{"operatorKey": []}]
"""The operator's routes: apps, their keys and quotas."""


DOCS_ASSETS = "/docs/assets"
"""Where each service serves the documentation UI's files from the installed
``swagger-ui-py`` package, so ``/docs`` works without internet."""


def docs_assets() -> Path:
    """Swagger UI's files in the installed ``swagger-ui-py`` (found without importing it: the
    package's own code, for other frameworks, is not needed)."""
    spec = importlib.util.find_spec("swagger_ui")
    assert spec is not None and spec.submodule_search_locations, "swagger-ui-py is not installed"
    return Path(spec.submodule_search_locations[0]) / "static"


def docs_ui() -> SwaggerRenderPlugin:
    """Swagger UI whose page loads only this service's own files (no CDN)."""
    return SwaggerRenderPlugin(
        js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
        css_url=f"{DOCS_ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{DOCS_ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{DOCS_ASSETS}/favicon-32x32.png'>",
        path="/",
    )


CONTRACT_VERSION = "0.2.0"
"""The public contract's version, semver for its clients: a change that breaks a client bumps
the major (while 0.x, the minor) and is listed in openapi/CHANGELOG.md; a test compares the
contract with the newest of openapi/released/ and refuses a breaking change the version does
not announce (``tools/contract/diff.py``)."""


def openapi_config(service: str) -> OpenAPIConfig:

    seat_token = SecurityScheme(
        type="http",
        scheme="bearer",
        description="The secret token a seat got when joining its table",
    )
    invitation_token = SecurityScheme(
        type="http",
        scheme="bearer",
        description="A private table's invitation, given once to its creator: to see the table,"
        " join it and watch its match as a spectator",
    )
    app_key = SecurityScheme(
        type="apiKey",
        name="X-API-Key",
        security_scheme_in="header",
        description="A client app's API key, given once by the operator: tables, their matches"
        " and webhook subscriptions belong to the app that made them. A key is of one of two"
        " kinds. A secret key (`pt_sk_...`; scopes `tables`, `webhooks`) stays on the app's"
        " server and may do all its scopes allow. A publishable key (`pt_pk_...`; only"
        " `tables`) may be shipped to browsers, so it is no secret: it creates, lists, reads"
        " and joins tables, and with a seat's token seats or removes a bot at that seat's"
        " table; players start, leave, play and rematch with their seat tokens. Re-seating"
        " a player, an invitation's rotation or revocation, imports, webhooks, tables of bots"
        " only, and bots seated without a seat's token need the secret key (403"
        " `secret-key-required`). `playtable stack` prints a development key of each kind",
    )
    operator_key = SecurityScheme(
        type="apiKey",
        name="X-API-Key",
        security_scheme_in="header",
        description="The operator's key (`PLAYTABLE_OPERATOR_KEY`, or one made with `playtable"
        " apps operator-key`): manages apps, their keys and quotas",
    )
    return OpenAPIConfig(
        title=f"playtable {service} API",
        version=CONTRACT_VERSION,
        description="Event-sourced backend for turn-based tabletop games",
        path="/docs",
        render_plugins=[docs_ui()],
        components=Components(
            security_schemes={
                "seatToken": seat_token,
                "invitationToken": invitation_token,
                "appKey": app_key,
                "operatorKey": operator_key,
            }
        ),
    )
