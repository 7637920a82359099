"""Waiting for JetStream at start: the one bounded retry every start goes through.

A cluster that has just started answers nothing until its servers have elected a meta
leader; a stream created with three copies answers nothing until its own leader is
elected, a moment later: a service that creates a bucket and writes to it at once gets
"no response from stream". Every step of a start that talks to JetStream (a stream, a
bucket, a consumer, a first write) runs through ``until_ready``, which tries the step
again while JetStream says it is not ready yet, logs what it waits for, and gives up after
a deadline (``BLENDMESH_START_WAIT``) with an error that names the step and what to do.
Steps must be safe to repeat: a retried create finds what the first attempt made.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from nats.errors import NoRespondersError
from nats.js.api import StreamInfo
from nats.js.errors import APIError, NoStreamResponseError, ServiceUnavailableError

from contracts.errors import BlendmeshError

log = logging.getLogger("blendmesh.ready")

READY_WAIT = 60.0  # seconds a start waits for JetStream by default
FIRST_PAUSE = 0.25
LONGEST_PAUSE = 2.0
# An attempt that JetStream does not answer is given up after 2 s, then 4, 6, ... 10: a
# leader elected meanwhile is found at the next attempt, not after the client's own
# timeout, and a server slow to answer still gets the time it needs.
ATTEMPT_WITHIN = 2.0
LONGEST_ATTEMPT = 10.0
# JetStream's own codes for "not yet": no meta leader, no stream or consumer leader,
# not enough servers known yet to place the copies (nats-server's errors.json).
NOT_YET = frozenset({10004, 10005, 10006, 10007, 10008, 10009, 10023, 10118, 10119})

ON_A_CLUSTER = (
    "on a cluster, start its servers: JetStream answers once a majority of them has elected "
    "a leader, and places a stream only on as many servers as BLENDMESH_REPLICAS says "
    "(at most the cluster's size); or allow more time with BLENDMESH_START_WAIT"
)

T = TypeVar("T")


class NotReady(BlendmeshError, ConnectionError):
    """A step of a start still met a JetStream that was not ready at its deadline."""


class NoLeaderYet(BlendmeshError):
    """A stream exists but has no leader yet: nothing can be written to it or read."""


def elected(info: StreamInfo) -> StreamInfo:
    """``info`` of a stream that has a leader (on one server, always); else ``NoLeaderYet``."""
    if info.cluster is not None and not info.cluster.leader:
        raise NoLeaderYet(f"stream {info.config.name} has no leader yet")
    return info


def not_yet(exc: BaseException) -> bool:
    """Whether ``exc`` says JetStream is not ready yet, rather than that the step is wrong."""
    if isinstance(
        exc, NoLeaderYet | NoStreamResponseError | ServiceUnavailableError | NoRespondersError
    ):
        return True
    if isinstance(exc, APIError):
        return exc.err_code in NOT_YET
    return isinstance(exc, TimeoutError)  # nats' own TimeoutError is one too


async def until_ready(
    what: str,
    step: Callable[[], Awaitable[T]],
    wait: float = READY_WAIT,
    hint: str = ON_A_CLUSTER,
    first_attempt: float | None = None,
) -> T:
    """Run ``step`` until it succeeds; while it fails because JetStream is not ready yet,
    try again for at most ``wait`` seconds (``math.inf``: for as long as it takes).
    ``what`` names what the start waits for in the log and in the final error, which
    ends with ``hint``: what the operator can do about it. An unanswered attempt is cut
    after ``first_attempt`` seconds (``ATTEMPT_WITHIN`` when None), the next ones after
    two, three, ... times that, at most ``LONGEST_ATTEMPT``."""
    first = ATTEMPT_WITHIN if first_attempt is None else first_attempt
    loop = asyncio.get_running_loop()
    began = loop.time()
    pause = FIRST_PAUSE
    attempt = 1
    while True:
        within = min(first * attempt, LONGEST_ATTEMPT, max(wait, 0.1))
        try:
            return await asyncio.wait_for(step(), within)
        except Exception as exc:
            if not not_yet(exc):
                raise
            said = f"no answer within {within:g} s" if isinstance(exc, TimeoutError) else exc
            waited = loop.time() - began
            if waited >= wait:
                raise NotReady(f"{what} was not ready within {wait:g} s ({said}); {hint}") from exc
            (log.warning if attempt == 1 else log.info)(
                "waiting for %s: JetStream is not ready (%s); attempt %d, %.1f s so far",
                what,
                said,
                attempt + 1,
                waited,
            )
        await asyncio.sleep(min(pause, max(wait - waited, 0.0)))
        pause = min(pause * 2, LONGEST_PAUSE)
        attempt += 1
