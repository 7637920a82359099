"""How one page of a run's detail is cut: which rows of which view it covers, and how many
of them fit one message. Pure: no I/O.

A run of the most operations a plan may hold has some two thousand rows (its actions, an
audit record per operation, two timeline entries per operation), well over a megabyte,
more than one NATS message holds (ADR 0076). The rows are numbered across the views in
``SECTIONS`` order, a page asks for a window of them, and ``cut`` keeps the leading rows
that fit the room of one reply, at least one, so every page moves the reader on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from contracts.queries import (
    MAX_RUN_ROWS,
    ActionRow,
    AuditRecord,
    RunDetail,
    RunPage,
    RunReply,
    RunRow,
    TimelineEntry,
)

# The run's rows in page order, each view by its key: its actions first, so the first page
# reads them (they change in place) at the same moment as the run's row; then the
# append-only views, in log order.
ORDER = {"actions": "operation_id", "audit_records": "stream_seq", "timeline": "stream_seq"}
SECTIONS = tuple(ORDER)
_encoder = msgspec.json.Encoder()


def windows(counts: Mapping[str, int], offset: int, limit: int) -> dict[str, tuple[int, int]]:
    """Per view, (its first row, how many rows) that rows ``offset`` to ``offset + limit``
    of the whole run cover; ``counts`` says how many rows each view holds."""
    found: dict[str, tuple[int, int]] = {}
    start, end = 0, offset + limit
    for name in SECTIONS:
        low, high = max(offset, start), min(end, start + counts[name])
        found[name] = (min(low - start, counts[name]), max(0, high - low))
        start += counts[name]
    return found


def fitting(sizes: Iterable[int], room: int) -> int:
    """How many of the leading rows, of these encoded sizes, fit in ``room`` bytes of JSON
    lists (a comma after each); at least one, so a page always moves on: a row that cannot
    fit alone is left to the reply's own size check to refuse with a reason."""
    used = taken = 0
    for size in sizes:
        used += size + 1
        if used > room and taken:
            break
        taken += 1
    return taken


def cut(found: Mapping[str, Any], offset: int, last_seq: int, room: int) -> RunReply:
    """The reply for the page of rows ``found`` holds from ``offset``, trimmed to ``room``
    bytes. ``found``: the run's row, ``rows`` (its rows up to ``upto_seq``), ``upto_seq``,
    ``latest_seq`` (its last event in the views) and each view's rows of the window."""
    actions = msgspec.convert(found["actions"], list[ActionRow])
    records = msgspec.convert(found["audit_records"], list[AuditRecord])
    timeline = msgspec.convert(found["timeline"], list[TimelineEntry])
    total, upto = int(found["rows"]), int(found["upto_seq"])

    def reply(taken: int, next_offset: int | None) -> RunReply:
        kept_actions = actions[:taken]
        kept_records = records[: max(0, taken - len(actions))]
        kept_timeline = timeline[: max(0, taken - len(actions) - len(records))]
        return RunReply(
            ok=True,
            last_seq=last_seq,
            detail=RunDetail(
                run=msgspec.convert(found["run"], RunRow),
                actions=kept_actions,
                audit_records=kept_records,
                timeline=kept_timeline,
            ),
            page=RunPage(
                offset=offset,
                next_offset=next_offset,
                rows=total,
                upto_seq=upto,
                moved=int(found["latest_seq"]) > upto,
            ),
        )

    # The reply without rows, its next offset as long as any can be: what rows leave room.
    bare = len(_encoder.encode(reply(0, MAX_RUN_ROWS)))
    sizes = (len(_encoder.encode(row)) for row in [*actions, *records, *timeline])
    end = offset + fitting(sizes, room - bare)
    return reply(end - offset, end if end < total else None)
