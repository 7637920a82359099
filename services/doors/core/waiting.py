"""Why a run waits: which service must act next, and what to tell the person following it.

A run moves only when the service that reads its newest event acts. When nothing happens
for a while, the follower asks which instances of that service answer a ping; none means
the run waits for a service that is not running, and the person is told which one and
how to start it, while the run stays valid and goes on when one appears. Pure: the ping
is the caller's.
"""

from __future__ import annotations

from contracts.events import AnyEvent, event_kind

# The newest event's kind -> the roles the run needs next, the one that acts first first.
# A request also needs an executor before it is planned: the planner plans against the
# tool catalog that executors publish.
NEXT: dict[str, tuple[str, ...]] = {
    "run.requested": ("planner", "executor"),
    "run.planned": ("policy",),
    "run.policy_decided": ("policy",),
    "run.approval_resolved": ("policy",),
    "run.approved": ("executor",),
    "run.op_started": ("executor",),
    "run.op_succeeded": ("executor",),
    "run.op_failed": ("executor",),
    "run.op_rolled_back": ("executor",),
    "run.op_skipped": ("executor",),
    "run.executed": ("guardians", "planner"),
    "run.gates_evaluated": ("planner",),
    "run.denied": ("planner",),
}
# How a person starts each role: the mesh in one process, or its own Procfile line.
_START = (
    "start it with `blendmesh up` (every service in one process), or the Procfile's "
    "`{role}` line (`python -m services.{role}`) with the mesh's NATS_URL"
)


def needs(events: list[AnyEvent]) -> tuple[str, ...]:
    """The roles the run waits for, the one that acts first first; none when it waits for
    a person or has ended."""
    if not events:  # the request is not even stored yet: the planner reads it first
        return NEXT["run.requested"]
    return NEXT.get(event_kind(events[-1]), ())


def missing(run_id: str, role: str, after: str) -> str:
    """What to tell a person whose run waits for a role no instance of which answers."""
    return (
        f"no {role} is running: run {run_id} waits for one after {after}; "
        + _START.format(role=role)
        + ". The run goes on once one starts."
    )


def stalled(run_id: str, role: str, after: str, instances: int, seconds: float) -> str:
    """What to tell a person whose run has not moved although the role answers."""
    return (
        f"run {run_id} has waited {seconds:.0f} s after {after} for the {role} "
        f"({instances} running): it may be busy with other runs"
    )


def troubled(run_id: str, role: str, after: str, problem: str) -> str:
    """What to tell a person whose run waits for a role that says what keeps it."""
    return f"run {run_id} waits after {after}: the {role} says {problem}"
