"""Atomic batch publish (ADR-50, nats-server 2.12+, a stream's ``allow_atomic``): several
messages stored in one stream all together, in order, or not at all.

A batch costs nats-server four fsyncs however many messages it holds (it is staged in a
store of its own, then written to the stream), against one per message published one by
one: it pays from ``MIN_BATCH`` messages on (ADR 0069 has the counts). Only the commit
waits for an answer; a batch whose sender dies before its commit is dropped whole.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from contracts.errors import BlendmeshError

MIN_BATCH = 5  # fewer messages cost fewer fsyncs one by one (a batch costs 4)
MAX_BATCH = 1000  # nats-server's limit on the messages of one atomic batch
COMMIT_TIMEOUT = 15.0  # seconds to wait for a batch's commit to be acknowledged
ALREADY_STORED = 10201  # a batch holding a message id the stream already stored
ATOMIC_DISABLED = 10174  # the stream does not take atomic batches

Message = tuple[str, bytes, dict[str, str]]  # subject, data, headers


class BatchUnanswered(BlendmeshError):
    """A batch's commit had no answer: the stream is missing or unreachable."""


class BatchRefused(BlendmeshError):
    """nats-server refused a batch whole: nothing of it was stored."""

    def __init__(self, code: int, description: str) -> None:
        super().__init__(f"atomic batch refused ({code}): {description}")
        self.code = code


async def publish_atomic(nc: Client, stream: str, messages: list[Message]) -> None:
    """Store ``messages`` (at most ``MAX_BATCH``) in ``stream`` as one atomic batch:
    all of them, in order, or none (``BatchRefused``). Only the commit waits for an answer;
    a batch whose sender dies before its commit is dropped whole by the server."""
    if not 1 <= len(messages) <= MAX_BATCH:
        raise ValueError(f"an atomic batch holds 1 to {MAX_BATCH} messages, not {len(messages)}")
    batch = uuid.uuid4().hex
    last = len(messages)
    for seq, (subject, data, headers) in enumerate(messages[:-1], start=1):
        marked = {**headers, "Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(seq)}
        await nc.publish(subject, data, headers=marked)
    subject, data, headers = messages[-1]
    commit = {
        **headers,
        "Nats-Batch-Id": batch,
        "Nats-Batch-Sequence": str(last),
        "Nats-Batch-Commit": "1",
    }
    try:
        answer = await nc.request(subject, data, COMMIT_TIMEOUT, headers=commit)
    except NoRespondersError:
        raise BatchUnanswered(
            f"no stream took the atomic batch of {last} messages for {stream} (no responders "
            f"on {subject}): nothing of it was stored. Is the stream there and does it have a "
            "leader? On a mesh blendmesh started, `blendmesh status` says."
        ) from None
    except NatsTimeoutError:
        raise BatchUnanswered(
            f"{stream} did not acknowledge the commit of an atomic batch of {last} messages "
            f"within {COMMIT_TIMEOUT:g} s: it may or may not be stored. Sending it again stores "
            "it once (its message ids, or a put of the same keys)."
        ) from None
    check_commit(answer.data, last, stream)


def check_commit(reply: bytes, count: int, stream: str) -> None:
    """Raise ``BatchRefused`` unless ``reply`` acknowledges ``count`` messages stored whole
    in ``stream``."""
    try:
        ack: dict[str, Any] = json.loads(reply)
    except ValueError:
        raise BatchRefused(0, f"unreadable commit acknowledgement {reply[:200]!r}") from None
    error = ack.get("error")
    if isinstance(error, dict):
        raise BatchRefused(int(error.get("err_code", 0)), str(error.get("description", "")))
    if ack.get("stream") != stream or ack.get("count") != count:
        raise BatchRefused(0, f"expected {count} messages stored in {stream}, got {ack}")
