"""Every live key of a KV bucket, listed without nats-py's race.

nats-py's ``KeyValue.keys()`` calls a bucket empty when its consumer has nothing pending
and its own callback has handled nothing yet. On a busy machine the server has often sent
every key by then, still unread in the client's queue, so a full bucket reads as empty (an
allowlist with two entries once listed none). Here the consumer's *delivered* count, as
the server reports it, decides whether anything is on its way.
"""

from __future__ import annotations

import asyncio

from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from contracts.errors import BlendmeshError
from services.runtime.nats import access

LIST_WAIT = 10.0  # seconds for the keys the server said it sent to arrive
_REMOVED = {"DEL", "PURGE"}


class KeysUnread(BlendmeshError, TimeoutError):
    """The server sent keys that did not arrive within the wait."""


async def live_keys(
    js: JetStreamContext, prefix: str, name: str, wait: float = LIST_WAIT
) -> list[str]:
    """The keys of the bucket ``<prefix>_<name>`` whose last entry is not a delete or purge."""
    bucket = access.bucket(prefix, name)
    head = f"$KV.{bucket}."
    latest: dict[str, bool] = {}  # key -> live
    done = asyncio.get_running_loop().create_future()

    async def on_message(msg: Msg) -> None:
        operation = (msg.headers or {}).get("KV-Operation", "")
        latest[msg.subject[len(head) :]] = operation not in _REMOVED
        if msg.metadata.num_pending == 0 and not done.done():
            done.set_result(None)

    sub = await js.subscribe(
        f"{head}>",
        stream=f"KV_{bucket}",
        cb=on_message,
        ordered_consumer=True,
        deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
        headers_only=True,
    )
    try:
        info = await sub.consumer_info()
        if info.num_pending == 0 and (info.delivered is None or not info.delivered.consumer_seq):
            return []  # nothing was, or will be, sent
        try:
            await asyncio.wait_for(done, wait)
        except TimeoutError:
            raise KeysUnread(f"the keys of {bucket} did not arrive within {wait:g} s") from None
    finally:
        await sub.unsubscribe()
    return [key for key, live in latest.items() if live]
