"""One way to page every list: a ``cursor`` query parameter, and ``next_cursor`` in the page to
pass as it for the next one, null on the last page. A cursor is the position after the last item
shown, in a form its pattern states (the contract says it), so any cursor of that form is a place
to start from; clients keep it as they got it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from litestar.params import Parameter

from shared.edge.errors import Problem

CURSOR_DESCRIPTION = "`next_cursor` of the previous page; without it, the first page"
NUMBERED = r"^[0-9]{1,18}$"
"""A numbered list's cursor (versions, ids): the number of the last item shown."""
TABLES = r"^[0-9]{1,16}-[0-9a-f]{32}$"
"""A list of tables' cursor: the last one's creation time (microseconds since 1970) and id."""


def _cursor(pattern: str) -> Parameter:
    """The ``cursor`` query parameter, its pattern in the contract (checked here, so that
    anything else is a ``bad-cursor``)."""
    return Parameter(description=CURSOR_DESCRIPTION, schema_extra={"pattern": pattern})


NumberedCursor = Annotated[str | None, _cursor(NUMBERED)]
TableCursor = Annotated[str | None, _cursor(TABLES)]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def start_after(cursor: str | None, after: int, largest: int) -> int:
    """Where a page of a numbered list starts: after the position its cursor holds (at most
    ``largest``, past which there is nothing) and after the deprecated ``after``: given both,
    after the later (no schema can say they exclude each other)."""
    if cursor is None:
        return after
    return max(min(int(_checked(cursor, NUMBERED)), largest), after)


def next_cursor_after(last: int | None) -> str | None:
    """The cursor of the page after the one whose last item is numbered ``last`` (None: the
    last page)."""
    return None if last is None else str(last)


def table_cursor(created_at: datetime, table_id: str) -> str:
    return f"{(created_at - _EPOCH) // _MICROSECOND}-{table_id}"


def table_position(cursor: str | None) -> tuple[datetime | str, str]:
    """Where a page of tables starts: after the table a cursor names, or at the first."""
    if cursor is None:
        return "-infinity", ""
    micros, _, table_id = _checked(cursor, TABLES).partition("-")
    return _EPOCH + int(micros) * _MICROSECOND, table_id


def _checked(cursor: str, pattern: str) -> str:
    """The cursor, if it matches its pattern as JSON Schema reads one (a search)."""
    if re.search(pattern, cursor) is None:
        raise Problem(400, "bad-cursor", "Bad cursor", "the cursor is not one this API gave")
    return cursor
