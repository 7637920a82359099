"""A ``run.requested`` with an ``origin``: a re-run or fork submitted on the bus (issue 42,
ADR 0063). On the bus a request is the client's event, so the door does not trust its plan
or request id: it reads the original, checks it is the asker's, and rewrites the event to
what ``steering`` makes of it, as the other doors build it."""

from __future__ import annotations

import msgspec

from contracts.events import RunRequested
from contracts.limits import DEFAULT_MAX_OPERATIONS, check_plan
from services.doors.bus.ports import MeshReads
from services.doors.core import steering
from services.doors.core.ownership import owns
from services.doors.core.steering import NoRun, Original, SteerInvalid


async def steered(reads: MeshReads, user: str, event: RunRequested) -> RunRequested:
    """``event`` as the door submits it; ``SteerRefused`` (``NoRun``, ``SteerInvalid``)
    when it cannot be, ``ValueError`` for a plan over the limits."""
    origin = event.origin
    if origin is None:
        return event
    if event.prompt is not None:
        raise SteerInvalid("a re-run or fork takes an edited `plan` or none, not a `prompt`")
    original = Original.of(await reads.events(origin.run))
    if original is None or not owns(original.requested.user, user):
        raise NoRun(f"no run {origin.run}")
    scene = original.requested.scene_id
    if event.scene_id != scene:
        raise SteerInvalid(f"run {origin.run} ran on scene {scene}; a re-run or fork names it")
    if origin.kind == "fork":
        history = await reads.scene_history(scene)
        parent = steering.parent_revision(original, history, origin.from_op)
        made = steering.fork(original, parent, event.request_id, event.plan, origin.from_op)
    else:
        head = await reads.scene_head(scene)
        made = steering.rerun(original, origin.from_op, head, event.plan, origin.kind)
    check_plan(made.plan, DEFAULT_MAX_OPERATIONS)
    return msgspec.structs.replace(
        event, plan=made.plan, request_id=made.plan["request_id"], origin=made.origin
    )
