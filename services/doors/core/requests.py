"""A run's request as a door makes it: fresh ids, the plan and the request checked before
anything of it enters the mesh. Every door builds its ``run.requested`` here."""

from __future__ import annotations

import time
import uuid
from typing import Any

from contracts import subjects
from contracts.events import RollbackBoundary, RunRequested, derive_event_id
from contracts.focus import Focus
from contracts.limits import DEFAULT_MAX_OPERATIONS, check_plan
from contracts.origins import RunOrigin
from contracts.session import BUS, DeterminismRequest, HostProfile
from services.runtime.service.limits import encode_bounded


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:20]}"


def build_request(
    *,
    user: str,
    scene_id: str,
    prompt: str | None = None,
    plan: Any = None,
    planner: str = "rules",
    thread_id: str | None = None,
    pre_approved: bool = False,
    rollback_boundary: RollbackBoundary = "operation",
    max_operations: int = DEFAULT_MAX_OPERATIONS,
    host: HostProfile = BUS,
    determinism: DeterminismRequest = "any",
    focus: Focus | None = None,
    origin: RunOrigin | None = None,
) -> RunRequested:
    """A RunRequested with fresh ids; a plan's own request_id is kept for idempotency.

    Raises ``ValueError``: ``LimitExceeded`` for a plan or request too large to enter the
    mesh, ``RequestRefused`` for a plan no service should see (it names the argument).
    The plan is checked here, before encoding turns its NaN and infinities into null.
    """
    subjects.check_token(scene_id, "scene id")
    check_plan(plan, max_operations)
    if thread_id is not None:
        subjects.check_token(thread_id, "thread id")
    run_id = new_id("run")
    request_id = new_id("req")
    if isinstance(plan, dict) and isinstance(plan.get("request_id"), str) and plan["request_id"]:
        request_id = plan["request_id"]
    request = RunRequested(
        event_id=derive_event_id(run_id, "run.requested"),
        at=time.time(),
        run_id=run_id,
        request_id=request_id,
        thread_id=thread_id or new_id("thread"),
        user=user,
        scene_id=scene_id,
        prompt=prompt,
        plan=plan,
        planner=planner,
        pre_approved=pre_approved,
        rollback_boundary=rollback_boundary,
        host=host,
        determinism=determinism,
        focus=focus,
        origin=origin,
    )
    encode_bounded(request)
    return request
