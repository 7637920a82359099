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
    DumpReply,
    RebuildReply,
    Reply,
    RunDetail,
    RunQuery,
    RunReply,
    RunRow,
    RunsQuery,
    RunsReply,
)

_R = TypeVar("_R", bound=Reply)
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


async def query_run(
    nc: Client,
    prefix: str,
    run_id: str,
    *,
    timeout: float = 10.0,
) -> RunDetail:
    """One run: its row, actions, audit records and timeline (log order)."""
    reply = await _ask(nc, prefix, "run", RunQuery(run_id=run_id), RunReply, timeout)
    if reply.detail is None:
        raise AuditError(f"the audit service sent no detail for run {run_id}")
    return reply.detail


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
