"""Conditional reads: ETags and 304 answers."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Response
from litestar.datastructures import ResponseHeader
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import HeaderParameter

from shared.edge.contract import problem_responses

IfNoneMatch = Annotated[
    str | None,
    HeaderParameter(
        name="If-None-Match",
        required=False,
        description="The ETag of the copy the client holds: 304 with no body if it is current",
    ),
]


def etag_matches(if_none_match: str | None, etag: str) -> bool:
    """RFC 9110's weak comparison of ``If-None-Match`` with the current ETag."""
    if if_none_match is None:
        return False
    if if_none_match.strip() == "*":
        return True
    return any(tag.strip().removeprefix("W/") == etag for tag in if_none_match.split(","))


def conditional(content: Any, etag: str, if_none_match: str | None) -> Response[Any]:
    """``content`` with its ETag, or 304 with no body when the client's copy is current. The
    answer depends on the token, so caches keep one per Authorization, and revalidate."""
    headers = {"ETag": etag, "Cache-Control": "private, no-cache", "Vary": "Authorization"}
    if etag_matches(if_none_match, etag):
        return Response(content=None, status_code=304, headers=headers)
    return Response(content, headers=headers)


def conditional_responses(*statuses: int) -> dict[int, ResponseSpec]:
    """``problem_responses`` of a conditional read, with its 304."""
    not_modified = ResponseSpec(
        data_container=None, description="The copy named by If-None-Match is current: no body"
    )
    return {304: not_modified, **problem_responses(*statuses)}


CONDITIONAL_READ: dict[str, Any] = {
    "response_headers": [
        ResponseHeader(
            name="ETag",
            description="The version read, as the caller sees it: send it back as If-None-Match",
            documentation_only=True,
        ),
        ResponseHeader(
            name="Cache-Control",
            description="`private, no-cache`: what a seat sees is for it only; revalidate",
            documentation_only=True,
        ),
        ResponseHeader(name="Vary", description="`Authorization`", documentation_only=True),
    ],
}
"""Route arguments documenting ``conditional``'s headers."""
