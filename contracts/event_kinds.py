"""Every kind of run event and who may publish it: the one table the rest derives from.

The NATS server's publish permissions (services/runtime/nats/access.py), the AsyncAPI document's
channels and its send operations (contracts/asyncapi.py) all read this table. A new run
event is a type in contracts/events.py and a row here; a test fails while a type of the
events union has no row, so it cannot reach the log unpermitted or undocumented.

Publishers are NATS roles, named as services/runtime/nats/access.py names them. ``client`` (the
CLI, the gateway, the MCP server) and ``door`` (the bus door, for the users' own logins,
docs/adr/0015) send what a person or program asks for; each service publishes the events
it owns, and no other role may.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

import msgspec

from contracts.events import (
    AllowlistRevoked,
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    CancelRequested,
    Denied,
    Event,
    Executed,
    GatesEvaluated,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
    Planned,
    PlanningStarted,
    PlanRejected,
    PolicyDecided,
    Replied,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunRequested,
)
from contracts.reviews import RevisionReviewed

ASKERS = ("client", "door")  # the roles that carry a person's or a program's request


@dataclass(frozen=True)
class RunEventKind:
    """One run event type, the last token of its subject, and the roles that publish it."""

    event: type[RunEvent]
    publishers: tuple[str, ...]

    @property
    def name(self) -> str:
        """The subject's last token: ``run.op_started`` is published as ``op_started``."""
        return str(self.event.__struct_config__.tag).removeprefix("run.")

    @property
    def asked(self) -> bool:
        """Sent by a person or a program outside the services (a door's send)."""
        return self.publishers == ASKERS


RUN_EVENT_KINDS: tuple[RunEventKind, ...] = (
    RunEventKind(RunRequested, ASKERS),
    RunEventKind(ApprovalResolved, ASKERS),
    RunEventKind(CancelRequested, ASKERS),
    RunEventKind(PlanningStarted, ("planner",)),
    RunEventKind(Replied, ("planner",)),
    RunEventKind(Planned, ("planner",)),
    RunEventKind(PlanRejected, ("planner",)),
    RunEventKind(RunCompleted, ("planner",)),
    RunEventKind(RunFailed, ("planner",)),
    RunEventKind(PolicyDecided, ("policy",)),
    RunEventKind(ApprovalRequested, ("policy",)),
    RunEventKind(Approved, ("policy",)),
    RunEventKind(Denied, ("policy",)),
    RunEventKind(OperationStarted, ("executor",)),
    RunEventKind(OperationSucceeded, ("executor",)),
    RunEventKind(OperationFailed, ("executor",)),
    RunEventKind(OperationRolledBack, ("executor",)),
    RunEventKind(OperationSkipped, ("executor",)),
    RunEventKind(Executed, ("executor",)),
    RunEventKind(GatesEvaluated, ("guardians",)),
)


@dataclass(frozen=True)
class SceneEventKind:
    """One event about a scene that belongs to no run, the last token of its subject
    (``<prefix>.scene.<scene_id>.<token>``), and the roles that publish it."""

    event: type[Event]
    token: str
    publishers: tuple[str, ...]


SCENE_EVENT_KINDS: tuple[SceneEventKind, ...] = (
    SceneEventKind(AllowlistRevoked, "allowlist_revoked", ("policy",)),
    # A door records a review after its own check of who may review (the doors' core
    # ``reviews.may_review``), as it sends an approval's resolution after its check.
    SceneEventKind(RevisionReviewed, "reviewed", ASKERS),
)


def scene_event_kind(event: type[msgspec.Struct]) -> SceneEventKind | None:
    """The row of a scene event type; None for any other event."""
    return next((kind for kind in SCENE_EVENT_KINDS if kind.event is event), None)


def scene_published_by(role: str) -> tuple[str, ...]:
    """The subject tokens of the scene events ``role`` may publish (the server's rule)."""
    return tuple(kind.token for kind in SCENE_EVENT_KINDS if role in kind.publishers)


def run_event_types() -> tuple[type[RunEvent], ...]:
    """The run events of the decoded union, in its order: what the table must cover."""
    return tuple(t for t in typing.get_args(AnyEvent) if issubclass(t, RunEvent))


def publishers() -> dict[str, tuple[str, ...]]:
    """Subject token -> the roles that may publish it (the AsyncAPI document's words)."""
    return {kind.name: kind.publishers for kind in RUN_EVENT_KINDS}


def published_by(role: str) -> tuple[str, ...]:
    """The subject tokens of the run events ``role`` may publish (the server's rule)."""
    return tuple(kind.name for kind in RUN_EVENT_KINDS if role in kind.publishers)


def asked() -> tuple[str, ...]:
    """The subject tokens a door sends for a person or program."""
    return tuple(kind.name for kind in RUN_EVENT_KINDS if kind.asked)
