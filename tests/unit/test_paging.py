"""Cursors: what a page's ``next_cursor`` holds comes back as the next page's start; anything
else is a 400 ``bad-cursor``, and the deprecated ``after`` is not taken beside a cursor."""

from __future__ import annotations

import pytest

from shared.http import PG_INT_MAX, Problem
from shared.paging import encode_cursor, next_cursor_after, start_after


def test_a_next_cursor_starts_the_next_page_after_the_last_item() -> None:
    assert next_cursor_after(None) is None
    assert start_after(next_cursor_after(41), 0, PG_INT_MAX) == 41
    assert start_after(None, 7, PG_INT_MAX) == 7  # the deprecated ``after``


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not base64!",
        encode_cursor(["41"]),
        encode_cursor([-1]),
        encode_cursor([PG_INT_MAX + 1]),
    ],
)
def test_a_cursor_this_api_did_not_give_is_refused(cursor: str) -> None:
    with pytest.raises(Problem) as refused:
        start_after(cursor, 0, PG_INT_MAX)
    assert (refused.value.status, refused.value.code) == (400, "bad-cursor")


def test_a_cursor_and_after_together_are_refused() -> None:
    with pytest.raises(Problem) as refused:
        start_after(next_cursor_after(3), 5, PG_INT_MAX)
    assert (refused.value.status, refused.value.code) == (400, "invalid-request")
