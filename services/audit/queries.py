"""Query responders: core NATS request/reply on ``<prefix>.query.<name>``, queue group "audit".

Nobody but the audit service opens its database; the CLI and the gateway ask here. Each
request runs in its own task, so a rebuild or a read waiting for the views to catch up
never holds up other queries, and every failure, including a malformed payload, becomes
``ok=false`` with a message that says what to do instead of a dead responder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.queries import (
    DumpQuery,
    DumpReply,
    RebuildCommand,
    RebuildReply,
    Reply,
    RunQuery,
    RunRow,
    RunsQuery,
    RunsReply,
)
from contracts.request_limits import MAX_PROMPT
from services.audit.rebuild_store import RebuildStore
from services.audit.replay import replay
from services.audit.run_pages import cut
from services.audit.store import SqliteStore
from services.runtime.nats import delivered
from services.runtime.nats.retry import poll
from services.runtime.service.host import Bus

log = logging.getLogger("blendmesh.audit")

QUEUE = "audit"
REPLY_HEADROOM = 16 * 1024  # the reply's headers and subject
_T = TypeVar("_T")
_encoder = msgspec.json.Encoder()
Answer = Callable[[bytes], Awaitable[Reply]]


class QueryFailed(BlendmeshError):
    """The query cannot be answered; the message goes back to the client as ``error``."""


def _shortened(row: dict[str, Any]) -> dict[str, Any]:
    """A run row with its prompt and message cut to what a list shows: a prompt logged
    before the doors bounded it (up to 900 KB) made every list of that user too big."""
    for name in ("prompt", "message"):
        text = row.get(name)
        if isinstance(text, str) and len(text) > MAX_PROMPT:
            row = {**row, name: text[: MAX_PROMPT - 1] + "…"}
    return row


def decode_query(name: str, data: bytes, kind: type[_T], example: str) -> _T:
    """Decode a request; an empty payload means every default."""
    try:
        return msgspec.json.decode(data or b"{}", type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise QueryFailed(f"malformed {name} query: {exc}; send JSON like {example}") from None


class QueryResponders:
    """Answers ``runs``, ``run``, ``dump`` and ``rebuild`` from the views in ``store``."""

    def __init__(self, bus: Bus, store: SqliteStore, catch_up_timeout: float = 5.0) -> None:
        self._bus = bus
        self._store = store
        self._timeout = catch_up_timeout
        self._subs: list[Subscription] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._rebuilding = asyncio.Lock()

    async def start(self) -> None:
        answers: dict[str, Answer] = {
            "runs": self.runs,
            "run": self.run,
            "dump": self.dump,
            "rebuild": self.rebuild,
        }
        for name, answer in answers.items():
            subject = subjects.query(self._bus.prefix, name)
            self._subs.append(
                await self._bus.nc.subscribe(subject, queue=QUEUE, cb=self._spawner(answer))
            )

    async def stop(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _spawner(self, answer: Answer) -> Callable[[Msg], Awaitable[None]]:
        async def on_request(msg: Msg) -> None:
            if not delivered.answerable(msg.reply, msg.headers):
                return  # a publish, a stream's delivery, or a reply aimed off the inboxes
            task = asyncio.create_task(self._respond(msg, answer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        return on_request

    async def _respond(self, msg: Msg, answer: Answer) -> None:
        try:
            reply = await answer(msg.data)
        except QueryFailed as exc:
            reply = Reply(ok=False, error=str(exc))
        except Exception as exc:
            log.exception("audit: query on %s failed", msg.subject)
            reply = Reply(ok=False, error=f"the audit service failed ({exc!r}); see its log")
        encoded = _encoder.encode(reply)
        room = self._bus.nc.max_payload - REPLY_HEADROOM
        if len(encoded) > room:  # the asker hears why, instead of waiting for a silence
            encoded = _encoder.encode(
                Reply(
                    ok=False,
                    error=f"the answer is {len(encoded):,} bytes, more than one message holds "
                    f"({room:,}); ask for fewer (a smaller limit)",
                )
            )
        with contextlib.suppress(Exception):
            await msg.respond(encoded)

    async def runs(self, data: bytes) -> Reply:
        query = decode_query("runs", data, RunsQuery, '{"limit": 50}')
        seq = await self.caught_up()
        found = await self._store.runs(query.limit, query.user, query.active)
        rows = [_shortened(row) for row in found]
        return RunsReply(ok=True, last_seq=seq, runs=msgspec.convert(rows, list[RunRow]))

    async def run(self, data: bytes) -> Reply:
        """One page of the run's rows, as many as fit one message (``run_pages.py``)."""
        query = decode_query("run", data, RunQuery, '{"run_id": "RUN_ID", "offset": 0}')
        # A later page reads the run up to where the first stopped, which the views held.
        seq = await self.caught_up() if query.upto_seq is None else await self._store.last_seq()
        found = await self._store.run_page(query.run_id, query.offset, query.limit, query.upto_seq)
        if found is None:
            raise QueryFailed(f"no run {query.run_id}; `blendmesh runs` lists the known runs")
        found["timeline"] = [with_facts(entry) for entry in found["timeline"]]
        return cut(found, query.offset, seq, self._bus.nc.max_payload - REPLY_HEADROOM)

    async def dump(self, data: bytes) -> Reply:
        decode_query("dump", data, DumpQuery, "{}")
        await self.caught_up()
        views: dict[str, list[dict[str, Any]]] = await self._store.dump()
        return DumpReply(ok=True, last_seq=views["tracking"][0]["last_seq"], views=views)

    async def rebuild(self, data: bytes) -> Reply:
        """Replay the whole log into a fresh file, then swap it in under the store's lock."""
        decode_query("rebuild", data, RebuildCommand, "{}")
        async with self._rebuilding:
            js, prefix = self._bus.js, self._bus.prefix
            target = await self._log_last_seq()
            fresh_path = self._store.path.with_name(self._store.path.name + ".rebuild")
            fresh = await RebuildStore.open(fresh_path)
            try:
                await replay(js, prefix, fresh, after=0, upto=target)

                async def catch_up(store: RebuildStore, live_seq: int) -> None:
                    # The live views may have moved on while we replayed: follow them.
                    await replay(js, prefix, store, after=target, upto=live_seq)

                await self._store.swap_in(fresh, catch_up)
            except BaseException:
                await fresh.close()
                _discard(fresh_path)
                raise
        counts = await self._store.counts()
        return RebuildReply(ok=True, last_seq=await self._store.last_seq(), counts=counts)

    async def caught_up(self) -> int:
        """Wait until the views reach the log's end as of now, so a client that just saw
        an event reads its own writes. Returns the applied sequence."""
        target = await self._log_last_seq()
        seq = await poll(self._store.last_seq, lambda seq: seq >= target, self._timeout, pause=0.02)
        if seq < target:
            raise QueryFailed(
                f"the audit views are behind the event log (applied {seq} of {target}); "
                "retry in a few seconds"
            )
        return seq

    async def _log_last_seq(self) -> int:
        info = await self._bus.js.stream_info(subjects.stream_name(self._bus.prefix))
        return int(info.state.last_seq)


def _discard(path: Path) -> None:
    for name in (str(path), f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        with contextlib.suppress(FileNotFoundError):
            Path(name).unlink()


def with_facts(entry: dict[str, Any]) -> dict[str, Any]:
    """A timeline row with its facts decoded; a row written before the column was added
    (NULL until ``blendmesh audit rebuild``) has none."""
    return entry | {"facts": msgspec.json.decode(entry.get("facts") or "{}")}
