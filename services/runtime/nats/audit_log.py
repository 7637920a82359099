"""The audit stream: the audit records the audit service projects, for anyone to follow.

It is kept apart from the event log on purpose: the log holds facts, this stream holds
what the audit service derived from them, so a reader of the log never meets a record
twice and the log's subjects stay the services'. Like the log it keeps everything and
allows no deletes or purges (docs/bus.md).
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import StreamConfig

from contracts import subjects
from services.runtime.nats.ready import READY_WAIT
from services.runtime.nats.streams import ensure_log, log_config, replicas_of


def audit_log_config(prefix: str, replicas: int = 1) -> StreamConfig:
    """The audit stream: kept like the event log (no delete, no purge, duplicates dropped)."""
    return log_config(
        subjects.audit_stream_name(prefix), subjects.audit_stream_subjects(prefix), replicas
    )


async def ensure_audit_log(js: JetStreamContext, prefix: str, wait: float = READY_WAIT) -> None:
    """Create the audit stream, or find it made and still immutable, as the event log is
    (on a server blendmesh started, the admin made it before the services started; no
    other role may create a stream)."""
    await ensure_log(js, audit_log_config(prefix, replicas_of(js)), wait)
