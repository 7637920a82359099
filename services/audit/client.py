"""What the CLI and the gateway call to read the audit views over NATS.

Two failures, kept apart because the fix differs:

    AuditClientError
    ├── AuditUnavailable   nobody answered: start the mesh / the audit service
    └── AuditError         the audit service answered no; its message says why
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.queries import (
    MAX_PAGE_ROWS,
    MAX_RUN_ROWS,
    DumpReply,
    RebuildReply,
    Reply,
    RunDetail,
    RunPage,
    RunQuery,
    RunReply,
    RunRow,
    RunsQuery,
    RunsReply,
)

_R = TypeVar("_R", bound=Reply)
# A run whose actions do not fit the first page and that moves on while they are read is
# read again from its new state, this many times at most.
RESTARTS = 3
# Pages of one run at most: every page holds at least one row.
MAX_PAGES = MAX_RUN_ROWS
_encoder = msgspec.json.Encoder()


class AuditClientError(BlendmeshError):
    """Base of the errors of this client."""


class AuditUnavailable(AuditClientError):
    """No audit service answered in time."""


class AuditError(AuditClientError):
    """The audit service refused or failed; ``str(exc)`` is its message."""


async def _ask(
    nc: Client,
    prefix: str,
    name: str,
    query: msgspec.Struct | None,
    reply: type[_R],
    timeout: float,
) -> _R:
    subject = subjects.query(prefix, name)
    payload = _encoder.encode(query) if query is not None else b"{}"
    try:
        msg = await nc.request(subject, payload, timeout=timeout)
    except NoRespondersError:
        raise AuditUnavailable(
            f"no audit service is listening on {subject}; start the mesh (`blendmesh up`) "
            "or `python -m services.audit` against the same NATS_URL and BLENDMESH_PREFIX"
        ) from None
    except (TimeoutError, NatsTimeoutError):
        raise AuditUnavailable(
            f"the audit service did not answer {subject} within {timeout:g}s; "
            "check that it is running and retry"
        ) from None
    try:
        answer = msgspec.json.decode(msg.data, type=reply)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AuditError(f"unreadable reply from the audit service on {subject}: {exc}") from None
    if not answer.ok:
        raise AuditError(answer.error or f"the audit service refused the {name} query")
    return answer


async def query_runs(
    nc: Client,
    prefix: str,
    limit: int = 50,
    *,
    user: str | None = None,
    active: bool = False,
    timeout: float = 10.0,
) -> list[RunRow]:
    """The newest ``limit`` runs (of ``user``, when given; only those under way or waiting
    for a person, when ``active``), newest first."""
    query = RunsQuery(limit=limit, user=user, active=active)
    reply = await _ask(nc, prefix, "runs", query, RunsReply, timeout)
    return reply.runs


async def query_run_page(
    nc: Client,
    prefix: str,
    run_id: str,
    offset: int = 0,
    *,
    limit: int = MAX_PAGE_ROWS,
    upto_seq: int | None = None,
    timeout: float = 10.0,
) -> tuple[RunDetail, RunPage]:
    """One page of the run's rows from ``offset`` (``RunQuery`` says how they are
    numbered), as many as fit one message, and where it sits among them."""
    try:
        query = RunQuery(run_id=run_id, offset=offset, limit=limit, upto_seq=upto_seq)
        # The constructor checks no bounds: a round trip through the codec does.
        query = msgspec.json.decode(_encoder.encode(query), type=RunQuery)
    except msgspec.ValidationError as exc:
        raise AuditError(
            f"cannot ask for that page of run {run_id}: {exc}; offset goes from 0 to "
            f"{MAX_RUN_ROWS:,}, limit from 1 to {MAX_PAGE_ROWS:,}"
        ) from None
    reply = await _ask(nc, prefix, "run", query, RunReply, timeout)
    if reply.detail is None or reply.page is None:
        raise AuditError(f"the audit service sent no page of run {run_id}")
    return reply.detail, reply.page


async def query_run(
    nc: Client,
    prefix: str,
    run_id: str,
    *,
    timeout: float = 10.0,
) -> RunDetail:
    """One run: its row, actions, audit records and timeline (log order), read page by
    page and put together as one state of the run (ADR 0076)."""
    for _ in range(RESTARTS):
        detail, page = await query_run_page(nc, prefix, run_id, timeout=timeout)
        parts = [detail]
        while page.next_offset is not None:
            if page.next_offset <= page.offset or len(parts) > MAX_PAGES:
                raise AuditError(
                    f"the audit service's pages of run {run_id} do not move on (page at "
                    f"{page.offset}, next at {page.next_offset}); see its log"
                )
            part, page = await query_run_page(
                nc, prefix, run_id, page.next_offset, upto_seq=page.upto_seq, timeout=timeout
            )
            parts.append(part)
            if part.actions and page.moved:
                break  # actions read after the run moved on: start again from its new state
        else:
            return RunDetail(
                run=parts[0].run,
                actions=[row for part in parts for row in part.actions],
                audit_records=[row for part in parts for row in part.audit_records],
                timeline=[row for part in parts for row in part.timeline],
            )
    raise AuditError(
        f"run {run_id} changed while its actions were read, {RESTARTS} times; ask again, "
        "or once the run has ended"
    )


async def rebuild(
    nc: Client,
    prefix: str,
    *,
    timeout: float = 120.0,
) -> RebuildReply:
    """Rebuild every view from the log; the reply has row counts and the last sequence."""
    return await _ask(nc, prefix, "rebuild", None, RebuildReply, timeout)


async def query_dump(
    nc: Client,
    prefix: str,
    *,
    timeout: float = 30.0,
) -> dict[str, list[dict[str, Any]]]:
    """Every view's rows, ordered deterministically, for exact comparisons."""
    reply = await _ask(nc, prefix, "dump", None, DumpReply, timeout)
    return reply.views
