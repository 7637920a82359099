"""Whether JetStream still works under a running mesh.

nats-server disables JetStream when a write fails for lack of disk space (a disk filled
past ``max_file_store`` by something else) and does not enable it again by itself: every
request then times out while the services look alive. ``blendmesh up`` waits on
``stopped`` beside its services, so it ends loudly and a supervisor, or the person once
there is room again, starts the mesh afresh; everything JetStream acknowledged is on disk
(``sync_interval: always``).
"""

from __future__ import annotations

import asyncio
import logging

from nats.errors import Error as NatsError
from nats.js import JetStreamContext

log = logging.getLogger("blendmesh.jetstream")

INTERVAL = 5.0  # seconds between two looks
MISSES = 4  # looks in a row without an answer before JetStream counts as stopped:
# one slow answer on a busy machine is not a stop; 20 s of none is


async def stopped(js: JetStreamContext, interval: float = INTERVAL, misses: int = MISSES) -> str:
    """Return, saying so, once JetStream has not answered ``misses`` looks in a row;
    never while it answers."""
    missed = 0
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.wait_for(js.account_info(), interval)
            missed = 0
            continue
        except (NatsError, TimeoutError) as exc:
            missed += 1
            said = str(exc) or type(exc).__name__
            log.warning("JetStream did not answer (%s); %d of %d", said, missed, misses)
        if missed >= misses:
            return (
                f"JetStream stopped answering ({said}); nats-server stops it when its disk is "
                "full: free space where the mesh keeps its home"
            )
