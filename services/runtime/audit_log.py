"""The audit stream: the audit records the audit service projects, for anyone to follow.

It is kept apart from the event log on purpose: the log holds facts, this stream holds
what the audit service derived from them, so a reader of the log never meets a record
twice and the log's subjects stay the services'. Like the log it keeps everything and
allows no deletes or purges (docs/bus.md).
"""

from __future__ import annotations

import asyncio

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import StreamConfig
from nats.js.errors import BadRequestError, NotFoundError

from contracts import subjects
from services.runtime.bus import log_config, replicas_of


def audit_log_config(prefix: str, replicas: int = 1) -> StreamConfig:
    """The audit stream: kept like the event log (no delete, no purge, duplicates dropped)."""
    return log_config(
        subjects.audit_stream_name(prefix), subjects.audit_stream_subjects(prefix), replicas
    )


async def ensure_audit_log(js: JetStreamContext, prefix: str, wait: float = 30.0) -> None:
    """Create the audit stream, or find it made (on a server blendmesh started, the admin
    made it before the services started; no other role may create a stream)."""
    name = subjects.audit_stream_name(prefix)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            await js.stream_info(name)
            return
        except NotFoundError:
            pass
        try:
            await js.add_stream(audit_log_config(prefix, replicas_of(js)))
            return
        except BadRequestError:  # created meanwhile by another process
            continue
        except (NatsError, TimeoutError) as exc:
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(
                    f"stream {name} does not exist and this user may not create it ({exc!r}); "
                    "start the mesh (`blendmesh up`, or the Procfile's nats line) first"
                ) from None
            await asyncio.sleep(0.25)
