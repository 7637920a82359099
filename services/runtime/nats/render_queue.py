"""The render work queue: a stream of frames, each message removed once acknowledged.

Retention is ``workqueue``, so a frame is handed to one consumer at a time and gone once
its executor acknowledges it; an executor that dies holding one lets the ack wait run out
and the server hands the frame to another (docs/adr/0064). Bounded in messages and bytes:
a full queue refuses new frames (``discard=new``) rather than dropping queued ones.
"""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

from contracts import subjects
from contracts.renders import MAX_JOB_FRAMES
from services.runtime.nats.ready import READY_WAIT
from services.runtime.nats.streams import DUPLICATE_WINDOW, ensure_stream, replicas_of

RENDER_QUEUE_FRAMES = 10 * MAX_JOB_FRAMES  # ten largest jobs waiting at once
FRAME_TASK_BYTES = 4096  # a frame task is well under 1 KiB
# No max_bytes: JetStream reserves a stream's max_bytes against the store's whole limit at
# once, so 64 MiB made a mesh with a 48 MiB store refuse to start. The queue is bounded by
# its messages times their size instead (at most 400 MiB; about 30 MiB when full).


def render_queue_config(prefix: str, replicas: int = 1) -> StreamConfig:
    return StreamConfig(
        name=subjects.render_queue_name(prefix),
        subjects=subjects.render_queue_subjects(prefix),
        retention=RetentionPolicy.WORK_QUEUE,
        storage=StorageType.FILE,
        max_msgs=RENDER_QUEUE_FRAMES,
        max_msg_size=FRAME_TASK_BYTES,
        discard=DiscardPolicy.NEW,
        # A request delivered twice enqueues its frames twice under the same ids.
        duplicate_window=DUPLICATE_WINDOW,
        num_replicas=replicas,
    )


async def ensure_render_queue(js: JetStreamContext, prefix: str, wait: float = READY_WAIT) -> None:
    """Create the render queue (as admin, before the services start)."""
    await ensure_stream(js, render_queue_config(prefix, replicas_of(js)), wait)
