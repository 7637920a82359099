"""Subject names, built here only, so no service spells a subject by hand.

Layout (docs/architecture.md): ``<prefix>.run.<run_id>.<event>`` for run events,
``<prefix>.thread.<thread_id>.<event>`` for conversation threads,
``<prefix>.scene.<scene_id>.<event>`` for scene revisions,
``<prefix>.deadletter.<consumer>`` for dead letters, and ``<prefix>.query.<name>`` for
request/reply queries, which deliberately stay outside the event-log stream.
"""

from __future__ import annotations

import re

from contracts.events import Event, RunEvent, ThreadMessage, event_kind

_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def check_token(value: str, what: str) -> str:
    """Reject ids that would break subject syntax ('.', '*', '>' or spaces)."""
    if not _TOKEN.match(value):
        raise ValueError(f"{what} {value!r} is not valid: use 1-128 letters, digits, '_' or '-'")
    return value


def stream_name(prefix: str) -> str:
    return f"{prefix.upper().replace('-', '_')}_EVENTS"


def stream_subjects(prefix: str) -> list[str]:
    return [f"{prefix}.run.>", f"{prefix}.thread.>", f"{prefix}.scene.>", f"{prefix}.deadletter.>"]


def run_events(prefix: str, run_id: str, kind: str = "*") -> str:
    """All events of one run, or one kind (``requested``, ``op_started``...)."""
    return f"{prefix}.run.{run_id}.{kind}"


def thread_events(prefix: str, thread_id: str, kind: str = "*") -> str:
    """The messages of one conversation thread (``message`` events)."""
    return f"{prefix}.thread.{thread_id}.{kind}"


def any_run(prefix: str, kind: str) -> str:
    """One kind of event across every run: a consumer filter subject."""
    return f"{prefix}.run.*.{kind}"


def run_id_in(subject: str) -> str | None:
    """The run id of a run event's subject (``<prefix>.run.<run_id>.<event>``), else None."""
    tokens = subject.split(".")
    return tokens[2] if len(tokens) == 4 and tokens[1] == "run" else None


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
    consumer = getattr(event, "consumer", "unknown")
    return deadletter(prefix, consumer)
