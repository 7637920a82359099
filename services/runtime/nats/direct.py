"""Reading stored messages by JetStream's batched direct get: one request, no consumer.

A batched direct get asks a stream (one made with ``allow_direct``) for up to ``batch``
messages on a subject from a sequence on. The server answers on the request's inbox with
each message, then an end-of-batch status that says how many more match. Reading a run's
history or an object's chunks this way is one round trip per batch; the ordered consumer
it replaces cost a consumer created, fed and deleted for every read, which was most of a
small read's time (ADR 0014).

Plumbing only: which subject to read, and how to decode it, is the caller's business.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from nats.aio.client import Client
from nats.aio.subscription import Subscription
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from contracts.errors import BlendmeshError

API = "$JS.API"
BATCH = 256  # messages one request asks for
BATCH_BYTES = 8 * 1024 * 1024  # and the bytes it may return, whichever comes first
# Statuses of a direct get's replies (ADR-31 of nats-io): nothing matched, end of batch.
NOT_FOUND = "404"
END_OF_BATCH = "204"


@dataclass(frozen=True)
class Stored:
    """One message as the stream stored it."""

    seq: int
    subject: str
    data: bytes


class DirectGetError(BlendmeshError, RuntimeError):
    """The stream refused a direct get, stopped answering, or held more than asked for."""


def client_of(js: JetStreamContext) -> Client:
    """The connection ``js`` was made from. nats-py keeps it as ``_nc`` and offers no
    public accessor, and has no batched direct get of its own to call instead; the
    ``nats-py>=2.10,<3`` pin and the tests of this module guard the attribute."""
    nc = getattr(js, "_nc", None)
    if not isinstance(nc, Client):
        raise RuntimeError(
            "this nats-py's JetStream context keeps no connection at `_nc`; "
            "install a nats-py within the range pyproject.toml pins"
        )
    return nc


async def read(
    js: JetStreamContext,
    stream: str,
    subject: str,
    *,
    limit: int,
    start: int = 1,
    batch: int = BATCH,
    timeout: float = 5.0,
) -> list[Stored]:
    """Every message on ``subject`` (wildcards allowed) from sequence ``start`` on, in
    stream order, as of when each batch is read. Raises ``DirectGetError`` when more than
    ``limit`` match, the stream refuses, or a reply takes longer than ``timeout``."""
    found: list[Stored] = []
    async for got in batches(
        js, stream, subject, limit=limit, start=start, batch=batch, timeout=timeout
    ):
        found += got
    return found


async def batches(
    js: JetStreamContext,
    stream: str,
    subject: str,
    *,
    limit: int,
    start: int = 1,
    batch: int = BATCH,
    timeout: float = 5.0,
) -> AsyncGenerator[list[Stored], None]:
    """``read``, one batch at a time (at most ``BATCH_BYTES`` each): a caller that writes
    each batch out holds one batch in memory, not the whole subject."""
    nc = client_of(js)
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    count = 0
    try:
        seq = start
        while True:
            # One more than the limit allows, so a subject that holds too much is noticed.
            size = min(batch, limit + 1 - count)
            ask = {"seq": seq, "next_by_subj": subject, "batch": size, "max_bytes": BATCH_BYTES}
            await nc.publish(f"{API}.DIRECT.GET.{stream}", json.dumps(ask).encode(), reply=inbox)
            got, more = await _batch(sub, stream, subject, timeout)
            count += len(got)
            if count > limit:
                raise DirectGetError(
                    f"more than {limit} messages on {subject} in stream {stream}; "
                    "read it in parts, from a later sequence"
                )
            if got:
                yield got
            if not got or not more:
                return
            seq = got[-1].seq + 1
    finally:
        await sub.unsubscribe()


async def _batch(
    sub: Subscription, stream: str, subject: str, timeout: float
) -> tuple[list[Stored], bool]:
    """One batch's messages, and whether more match after it."""
    got: list[Stored] = []
    while True:
        try:
            msg = await sub.next_msg(timeout=timeout)
        except (TimeoutError, NatsTimeoutError):
            raise DirectGetError(
                f"stream {stream} sent no reply for {timeout:g} s while {subject} was read; "
                "check that nats-server is up and try again"
            ) from None
        headers = msg.headers or {}
        status = headers.get("Status")
        if status == NOT_FOUND:
            return got, False
        if status == END_OF_BATCH:
            return got, int(headers.get("Nats-Num-Pending") or 0) > 0
        if status is not None:
            raise DirectGetError(
                f"stream {stream} refused to read {subject}: {status} "
                f"{headers.get('Description', '')}".rstrip()
            )
        got.append(Stored(int(headers["Nats-Sequence"]), headers["Nats-Subject"], msg.data))
