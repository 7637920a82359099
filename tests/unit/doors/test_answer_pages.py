"""Answers cut to a size (services/doors/core/pages.py): the bus door's ``run.events`` and
``run.audit``, and the MCP ``audit`` tool, page what one answer should not hold."""

from __future__ import annotations

import msgspec

from services.doors.core.pages import page

ITEMS = [{"n": i, "text": "x" * 90} for i in range(10)]
EACH = len(msgspec.json.encode(ITEMS[0]))


def test_page_when_items_exceed_the_budget_keeps_those_that_fit_and_says_where_next() -> None:
    taken, next_offset = page(ITEMS, 0, 3 * EACH)
    assert taken == ITEMS[:3] and next_offset == 3
    taken, next_offset = page(ITEMS, 9, 3 * EACH)
    assert taken == ITEMS[9:] and next_offset is None


def test_page_when_one_item_is_larger_than_the_budget_still_moves_on() -> None:
    taken, next_offset = page(ITEMS, 4, 10)
    assert taken == [ITEMS[4]] and next_offset == 5


def test_page_when_offset_is_past_the_end_answers_nothing_and_no_next() -> None:
    assert page(ITEMS, 10, 1000) == ([], None)
    assert page(ITEMS, 5000, 1000) == ([], None)
