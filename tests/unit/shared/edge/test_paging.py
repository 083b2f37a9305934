"""Cursors: what a page's ``next_cursor`` holds comes back as the next page's start; anything
else is a 400 ``bad-cursor``; beside the deprecated ``after``, the later position counts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.edge.errors import Problem
from shared.edge.guard import PG_INT_MAX
from shared.edge.paging import next_cursor_after, start_after, table_cursor, table_position


def test_a_next_cursor_starts_the_next_page_after_the_last_item() -> None:
    assert next_cursor_after(None) is None
    assert start_after(next_cursor_after(41), 0, PG_INT_MAX) == 41
    assert start_after(None, 7, PG_INT_MAX) == 7  # the deprecated ``after``


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a number!",
        "WzQxXQ==",  # the JSON [41] in base64, as cursors were in 0.2.0's first drafts
        "-1",
        "1" * 19,
    ],
)
def test_a_cursor_this_api_did_not_give_is_refused(cursor: str) -> None:
    with pytest.raises(Problem) as refused:
        start_after(cursor, 0, PG_INT_MAX)
    assert (refused.value.status, refused.value.code) == (400, "bad-cursor")


def test_a_cursor_past_the_largest_position_starts_at_the_end() -> None:
    """Any cursor of the form the contract states is a place to start from."""
    assert start_after(str(PG_INT_MAX + 1), 0, PG_INT_MAX) == PG_INT_MAX


def test_a_cursor_and_after_together_start_after_the_later() -> None:
    assert start_after(next_cursor_after(3), 5, PG_INT_MAX) == 5
    assert start_after(next_cursor_after(8), 5, PG_INT_MAX) == 8


def test_a_table_cursor_names_the_last_table_exactly() -> None:
    created = datetime(2026, 12, 3, 8, 45, 49, 158123, tzinfo=UTC)
    cursor = table_cursor(created, "0123456789abcdef0123456789abcdef")
    assert table_position(cursor) == (created, "0123456789abcdef0123456789abcdef")
    assert table_position(None) == ("-infinity", "")
    with pytest.raises(Problem) as refused:
        table_position(created.isoformat())
    assert (refused.value.status, refused.value.code) == (400, "bad-cursor")
