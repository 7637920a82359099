"""How ``query_run`` puts a run's pages together (ADR 0076): in order, starting again when
the run moved while its actions were read, and refusing pages that do not move on. The
audit service is played by a connection that answers the pages it is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from contracts.queries import ActionRow, RunDetail, RunPage, RunQuery, RunReply, RunRow
from services.audit import client as audit

RUN = RunRow(
    run_id="run-1", request_id="req", thread_id="th", user="ana", scene_id="s", prompt=None,
    state="executing", planner="plan", model=None, error_code=None, message=None,
    blend_path=None, scene_hash=None, created_at=1.0, updated_at=2.0,
)  # fmt: skip


def action(op: str) -> ActionRow:
    return ActionRow(
        run_id="run-1", operation_id=op, tool_name="object.create", safety_level="safe_write",
        state="completed", decision="allow", mcp_call_id=None, blender_mutation_id=None,
        error_code=None,
    )  # fmt: skip


def reply(ops: list[str], offset: int, next_offset: int | None, moved: bool = False) -> bytes:
    page = RunPage(offset=offset, next_offset=next_offset, rows=4, upto_seq=9, moved=moved)
    detail = RunDetail(run=RUN, actions=[action(op) for op in ops])
    return msgspec.json.encode(RunReply(ok=True, last_seq=9, detail=detail, page=page))


@dataclass
class Audit:
    """A connection whose ``request`` answers each page from ``answers`` in turn."""

    answers: list[bytes]
    asked: list[RunQuery] = field(default_factory=list)

    async def request(self, subject: str, payload: bytes, timeout: float) -> Any:
        self.asked.append(msgspec.json.decode(payload, type=RunQuery))
        return SimpleNamespace(data=self.answers.pop(0))


async def test_query_run_when_pages_follow_each_other_joins_them_in_order() -> None:
    nc = Audit([reply(["a", "b"], 0, 2), reply(["c", "d"], 2, None)])
    detail = await audit.query_run(nc, "bm", "run-1")  # type: ignore[arg-type]
    assert [a.operation_id for a in detail.actions] == ["a", "b", "c", "d"]
    assert [(q.offset, q.upto_seq) for q in nc.asked] == [(0, None), (2, 9)]


async def test_query_run_when_run_moved_while_actions_were_read_starts_again() -> None:
    nc = Audit(
        [
            reply(["a", "b"], 0, 2),
            reply(["c", "d"], 2, None, moved=True),  # the first two may have changed
            reply(["a", "b"], 0, 2),
            reply(["c", "d"], 2, None),
        ]
    )
    detail = await audit.query_run(nc, "bm", "run-1")  # type: ignore[arg-type]
    assert [a.operation_id for a in detail.actions] == ["a", "b", "c", "d"]
    assert [q.offset for q in nc.asked] == [0, 2, 0, 2]


async def test_query_run_when_run_keeps_moving_gives_up_saying_so() -> None:
    moving = [reply(["a", "b"], 0, 2), reply(["c", "d"], 2, None, moved=True)]
    nc = Audit(moving * audit.RESTARTS)
    with pytest.raises(audit.AuditError, match="run run-1 changed while its actions were read"):
        await audit.query_run(nc, "bm", "run-1")  # type: ignore[arg-type]


async def test_query_run_when_a_page_does_not_move_on_refuses_it() -> None:
    nc = Audit([reply(["a"], 0, 1), reply([], 1, 1)])
    with pytest.raises(audit.AuditError, match="pages of run run-1 do not move on"):
        await audit.query_run(nc, "bm", "run-1")  # type: ignore[arg-type]


async def test_query_run_page_when_reply_has_no_page_says_so() -> None:
    bare = msgspec.json.encode(RunReply(ok=True, detail=RunDetail(run=RUN)))
    nc = Audit([bare])
    with pytest.raises(audit.AuditError, match="sent no page of run run-1"):
        await audit.query_run_page(nc, "bm", "run-1")  # type: ignore[arg-type]
