"""Why JetStream did not store an event in time, in words an operator can act on.

A publish to a replicated stream waits for a majority of its servers; with two of three
gone it ends in nats-py's bare ``nats: timeout`` after its timeout. The servers the
client knows (those configured and those the cluster announced) are dialled here, each
for a moment, so the error can say how many answer and how many a majority needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import ParseResult

from nats.aio.client import Client

from contracts.errors import BlendmeshError

DIAL_SECONDS = 0.5


class JetStreamUnavailable(BlendmeshError, ConnectionError):
    """JetStream stored nothing in time; the message says how many servers answer."""


def log_unavailable(exc: BaseException) -> bool:
    """Whether a write failed because JetStream could not store anything then: no stream
    leader (an election after a server died), too few servers, or no answer at all. Such
    a write succeeds once a leader is elected; nothing about the message was wrong."""
    from nats.errors import NoRespondersError  # imported on a failure only
    from nats.js.errors import NoStreamResponseError, ServiceUnavailableError

    from services.runtime.nats.atomic import BatchUnanswered

    unavailable = (
        JetStreamUnavailable,
        BatchUnanswered,
        NoRespondersError,
        NoStreamResponseError,
        ServiceUnavailableError,
    )
    seen: BaseException | None = exc
    for _ in range(CHAIN_DEPTH):
        if seen is None:
            return False
        if isinstance(seen, unavailable):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


CHAIN_DEPTH = 8  # links of ``__cause__`` / ``__context__`` looked at (a chain may loop)


async def _answers(url: ParseResult) -> bool:
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(url.hostname, url.port or 4222), DIAL_SECONDS
        )
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def unavailable(nc: Client, stream: str) -> JetStreamUnavailable:
    """The error for a publish to ``stream`` that timed out, with the servers counted."""
    known = {(u.hostname, u.port): u for u in nc.servers}
    up = sum(await asyncio.gather(*(_answers(u) for u in known.values())))
    total = len(known)
    majority = total // 2 + 1
    if total > 1 and up < majority:
        return JetStreamUnavailable(
            f"JetStream has no leader for {stream}: {up} of {total} servers reachable, and "
            f"a replicated stream needs {majority}; start the stopped servers (nothing "
            "was lost: the event was not stored, so send it again)"
        )
    return JetStreamUnavailable(
        f"JetStream did not store the event in {stream} in time ({up} of {total} servers "
        "reachable); `blendmesh status` shows why (JetStream stops when its disk is full)"
    )
