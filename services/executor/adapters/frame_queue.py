"""The render queue as the executor uses it: puts a job's frames on it, and takes them
one at a time for its render worker (docs/adr/0064).

This loop alone settles the queue's messages, as the event consumer loop alone settles
the log's: a frame is acknowledged only once its ``render_frame`` event is in the log, so
an executor killed at any point leaves the frame to come back after ``ack_wait`` to
whichever executor asks next. While Blender renders, the loop tells the server the frame
is in progress, so a long frame is not taken by a second executor while its first lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError

from contracts import subjects
from contracts.event_base import Event
from contracts.render_events import RenderEnded
from contracts.renders import FrameTask, decode_task, encode_task
from services.executor.domain.render_worker import FrameRefused, QueueFull, RenderWorker
from services.runtime.nats.access import RENDER_WORKERS
from services.runtime.nats.durables import DurableConsumer
from services.runtime.nats.ready import READY_WAIT, until_ready
from services.runtime.nats.render_queue import RENDER_QUEUE_FRAMES
from services.runtime.service.publishers import EventPublisher

log = logging.getLogger("blendmesh.executor")

ENQUEUE_AT_ONCE = 100  # frames published before waiting for the server's acks
FETCH_WAIT = 5.0


# JetStream's error codes for a stream at its max_msgs or max_bytes with discard=new.
QUEUE_FULL_CODES = frozenset({10077, 10047})


class FrameQueue:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self.stream = subjects.render_queue_name(prefix)

    async def enqueue(self, tasks: Sequence[FrameTask]) -> None:
        """Put ``tasks`` on the queue; each under an id of its job's request and its
        frame, so a request handled twice queues each frame once."""
        for at in range(0, len(tasks), ENQUEUE_AT_ONCE):
            await asyncio.gather(*(self._put(task) for task in tasks[at : at + ENQUEUE_AT_ONCE]))

    async def _put(self, task: FrameTask) -> None:
        try:
            await self._js.publish(
                subjects.render_frames(self._prefix, task.job_id, task.frame),
                encode_task(task),
                stream=self.stream,
                headers={"Nats-Msg-Id": f"{task.request_event_id}/{task.frame}"},
            )
        except APIError as exc:
            if exc.err_code in QUEUE_FULL_CODES:
                raise QueueFull(
                    f"the render queue holds as many frames as it may ({RENDER_QUEUE_FRAMES}); "
                    "ask again when jobs under way have finished"
                ) from None
            raise


class FrameTaker:
    """Takes frames off the queue for one render worker until stopped."""

    def __init__(
        self,
        js: JetStreamContext,
        prefix: str,
        worker: RenderWorker,
        publisher: EventPublisher,
        ack_wait: float,
        max_deliver: int,
        release: Callable[[str, str], Awaitable[None]] | None = None,
    ) -> None:
        self._js = js
        self._release = release  # a user's job no longer counts against their budget
        self._worker = worker
        self._publisher = publisher
        self._ack_wait = ack_wait
        self._max_deliver = max_deliver
        self.stream = subjects.render_queue_name(prefix)
        self._durable = DurableConsumer(
            js,
            self.stream,
            ConsumerConfig(
                durable_name=RENDER_WORKERS,
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ack_wait,
                max_deliver=max_deliver,
                max_ack_pending=1000,
            ),
        )
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self, wait: float = READY_WAIT) -> None:
        async def bind() -> None:
            await self._durable.ensure()
            self._sub = await self._js.pull_subscribe_bind(
                durable=RENDER_WORKERS, stream=self.stream
            )

        await until_ready(f"consumer {RENDER_WORKERS} of stream {self.stream}", bind, wait)
        self._task = asyncio.create_task(self._run(), name="render frames")

    async def stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await self._sub.unsubscribe()

    async def _run(self) -> None:
        while not self._stopping:
            try:
                msgs = await self._sub.fetch(batch=1, timeout=FETCH_WAIT)
            except (TimeoutError, NatsTimeoutError):
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: keep taking
                log.warning("render queue: fetch failed (%s); retrying", exc)
                await asyncio.sleep(0.5)
                continue
            for msg in msgs:
                try:
                    await self._settle(msg)
                except asyncio.CancelledError:
                    raise
                except Exception:  # one frame must never end the loop: it comes back
                    log.exception("render queue: could not settle %s", msg.subject)

    async def _settle(self, msg: Msg) -> None:
        try:
            task = decode_task(msg.data)
        except Exception as exc:  # noqa: BLE001 - only executors write here: a bug, say so
            log.error("render queue: unreadable frame task on %s: %s", msg.subject, exc)
            await msg.term()
            return
        beating = asyncio.create_task(self._beat(msg))
        try:
            events = await self._worker.render(task)
            if not events:  # the job was cancelled or ended: the frame is not wanted
                events = await self._worker.cancelled(task)
            else:
                await self._publish(events)
                events = await self._worker.finish(task)
        except FrameRefused as refused:
            events = await self._worker.fail(task, str(refused))
        except asyncio.CancelledError:  # stopping: another executor takes it at once
            with contextlib.suppress(Exception):
                await asyncio.shield(msg.nak())
            raise
        except Exception as exc:  # noqa: BLE001 - Blender failed or hung: try elsewhere
            log.warning("frame %d of job %s failed: %s", task.frame, task.job_id, exc)
            if msg.metadata.num_delivered < self._max_deliver:
                await msg.nak(delay=1.0)
                return
            # The last delivery: the queue would keep the frame and the job never end.
            why = f"frame {task.frame} failed {self._max_deliver} times; the last time: {exc}"
            events = await self._worker.fail(task, why[:500])
        finally:
            beating.cancel()
        await self._publish(events)
        if self._release is not None and any(isinstance(e, RenderEnded) for e in events):
            await self._release(task.user, task.job_id)
        await msg.ack_sync()

    async def _publish(self, events: Sequence[Event]) -> None:
        for event in events:
            await self._publisher.publish(event)

    async def _beat(self, msg: Msg) -> None:
        while True:
            await asyncio.sleep(self._ack_wait / 3)
            with contextlib.suppress(Exception):
                await msg.in_progress()
