"""One way to page every list: an opaque ``cursor`` query parameter, and ``next_cursor`` in the
page to pass as it for the next one, null on the last page. A cursor is the position after the
last item shown, as JSON in URL-safe base64: clients keep it as they got it."""

from __future__ import annotations

import base64
from typing import Annotated, Any, TypeVar

import msgspec

from shared.http import Problem, invalid_request

T = TypeVar("T")

CURSOR_DESCRIPTION = "`next_cursor` of the previous page (opaque); without it, the first page"


def encode_cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(msgspec.json.encode(position)).decode()


def decode_cursor(cursor: str, position: type[T]) -> T:
    """The position a cursor of this API holds; 400 ``bad-cursor`` for anything else."""
    try:
        return msgspec.json.decode(base64.urlsafe_b64decode(cursor.encode()), type=position)
    except (ValueError, msgspec.DecodeError):
        raise Problem(
            400, "bad-cursor", "Bad cursor", "the cursor is not one this API gave"
        ) from None


def start_after(cursor: str | None, after: int, largest: int) -> int:
    """Where a page of a numbered list (versions, ids) starts: after the position its cursor
    holds, or after the deprecated ``after`` (not both)."""
    if cursor is None:
        return after
    if after:
        raise invalid_request(
            "send `cursor` or the deprecated `after`, not both",
            [{"message": "given with cursor", "source": "query", "key": "after"}],
        )
    (position,) = decode_cursor(cursor, tuple[Annotated[int, msgspec.Meta(ge=0, le=largest)]])
    return position


def next_cursor_after(last: int | None) -> str | None:
    """The cursor of the page after the one whose last item is numbered ``last`` (None: the
    last page)."""
    return None if last is None else encode_cursor([last])
