"""Subject names, built here only, so no service spells a subject by hand.

Layout (docs/architecture.md): ``<prefix>.run.<run_id>.<event>`` for run events,
``<prefix>.thread.<thread_id>.<event>`` for conversation threads,
``<prefix>.scene.<scene_id>.<event>`` for scene revisions,
``<prefix>.deadletter.<consumer>`` for dead letters,
``<prefix>.query.<name>`` for request/reply queries, which deliberately stay outside the
event-log stream, ``<prefix>.api.<user>.<verb>`` for what a user's own login asks the bus
door and ``<prefix>.feed.<user>.run.<run_id>.<event>`` for the run events the door passes
on to that login (docs/adr/0015); neither is in a stream. The audit service republishes
what it projects on ``<prefix>.audit.<user>.<scene_id>.<run_id>``, a stream of its own
(docs/bus.md).
"""

from __future__ import annotations

import hashlib
import re

from contracts.events import AllowlistRevoked, Event, RunEvent, ThreadMessage, event_kind
from contracts.reviews import RevisionReviewed

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def check_token(value: str, what: str) -> str:
    """Reject ids that would break subject syntax ('.', '*', '>' or spaces)."""
    if not _TOKEN.match(value):
        raise ValueError(f"{what} {value!r} is not valid: use 1-128 letters, digits, '_' or '-'")
    return value


def stream_name(prefix: str) -> str:
    return f"{prefix.upper().replace('-', '_')}_EVENTS"


def stream_subjects(prefix: str) -> list[str]:
    return [
        f"{prefix}.run.>",
        f"{prefix}.thread.>",
        f"{prefix}.scene.>",
        f"{prefix}.deadletter.>",
        # Legacy (ADR 0010): kept so the stream's config and older logs stay as they are;
        # no login may publish there any more (ADR 0015).
        f"{prefix}.signed.>",
    ]


def audit_stream_name(prefix: str) -> str:
    """The stream of audit records, apart from the log: it is derived, not a fact."""
    return f"{prefix.upper().replace('-', '_')}_AUDIT"


def audit_stream_subjects(prefix: str) -> list[str]:
    return [f"{prefix}.audit.>"]


def audit_records(prefix: str, user: str = "*", scene_id: str = "*", run_id: str = "*") -> str:
    """Audit records, filtered by any of user, scene and run (``*`` matches every one)."""
    return f"{prefix}.audit.{user}.{scene_id}.{run_id}"


def subject_token(value: str | None) -> str:
    """``value`` as one subject token: itself when it is a valid token, else ``=`` and a
    hash of it ('=' never occurs in a valid token, so the two forms cannot collide)."""
    if value is None:
        return "="  # no scene known: '=' alone is neither a valid token nor a hashed one
    if _TOKEN.match(value):
        return value
    return "=" + hashlib.sha256(value.encode()).hexdigest()[:32]


def run_events(prefix: str, run_id: str, kind: str = "*") -> str:
    """All events of one run, or one kind (``requested``, ``op_started``...)."""
    return f"{prefix}.run.{run_id}.{kind}"


def thread_events(prefix: str, thread_id: str, kind: str = "*") -> str:
    """The messages of one conversation thread (``message`` events)."""
    return f"{prefix}.thread.{thread_id}.{kind}"


def scene_events(prefix: str, scene_id: str, kind: str = "*") -> str:
    """Events about one scene that belong to no run (``allowlist_revoked``, ``reviewed``)."""
    return f"{prefix}.scene.{subject_token(scene_id)}.{kind}"


def any_scene(prefix: str, kind: str) -> str:
    """One kind of scene event across every scene: a permission or filter subject."""
    return f"{prefix}.scene.*.{kind}"


def any_run(prefix: str, kind: str) -> str:
    """One kind of event across every run: a consumer filter subject."""
    return f"{prefix}.run.*.{kind}"


def run_id_in(subject: str) -> str | None:
    """The run id of a run event's subject (``<prefix>.run.<run_id>.<event>``), else None."""
    tokens = subject.split(".")
    return tokens[2] if len(tokens) == 4 and tokens[1] == "run" else None


def signed_run_id(subject: str) -> str | None:
    """The run id of a legacy signed message (``<prefix>.signed.<run_id>.<kind>``, ADR
    0010, superseded by 0015): older logs hold them, and they were never a run's facts."""
    tokens = subject.split(".")
    return tokens[2] if len(tokens) == 4 and tokens[1] == "signed" else None


def door_api(prefix: str, user: str, verb: str) -> str:
    """Where a user's login asks the bus door for ``verb`` (``run.submit``...). ``user``
    is the user's subject token (``subject_token``); the server lets a login publish only
    under its own."""
    return f"{prefix}.api.{user}.{verb}"


def any_door_api(prefix: str) -> str:
    """Every user's requests to the bus door: what the door subscribes to."""
    return f"{prefix}.api.*.>"


def door_request(prefix: str, subject: str) -> tuple[str, str] | None:
    """``(user token, verb)`` of a subject built by ``door_api``, else None."""
    head = f"{prefix}.api."
    if not subject.startswith(head):
        return None
    user, _, verb = subject[len(head) :].partition(".")
    return (user, verb) if user and verb else None


def feed(prefix: str, user: str, run_id: str = "*", kind: str = "*") -> str:
    """Where the bus door passes on the events of ``user``'s runs (core NATS, no stream)."""
    return f"{prefix}.feed.{user}.run.{run_id}.{kind}"


def any_feed(prefix: str, user: str = "*") -> str:
    """Every feed subject (what the door publishes on), or one user's (what they hear)."""
    return f"{prefix}.feed.>" if user == "*" else f"{prefix}.feed.{user}.>"


def deadletter(prefix: str, consumer: str) -> str:
    return f"{prefix}.deadletter.{consumer}"


def query(prefix: str, name: str) -> str:
    return f"{prefix}.query.{name}"


def for_event(prefix: str, event: Event) -> str:
    """The subject an event is published on."""
    kind = event_kind(event)
    if isinstance(event, RunEvent):
        return run_events(prefix, event.run_id, kind.removeprefix("run."))
    if isinstance(event, ThreadMessage):
        return thread_events(prefix, event.thread_id, kind.removeprefix("thread."))
    if isinstance(event, AllowlistRevoked):
        return scene_events(prefix, event.entry.scene_id, "allowlist_revoked")
    if isinstance(event, RevisionReviewed):
        return scene_events(prefix, event.scene_id, "reviewed")
    consumer = getattr(event, "consumer", "unknown")
    return deadletter(prefix, consumer)
