"""The audit consumer's handler: apply each event of the log to the views, exactly once.

Audit only reads, so it never produces events. The live consumer and ``replay.py`` (which
``rebuild`` uses) both go through ``apply_event``, which is why a rebuilt database equals
the live one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from contracts import subjects
from contracts.events import AnyEvent, Event, RunEvent
from services.audit.projections import project
from services.audit.store import ViewStore
from services.runtime.consumer import Delivery, Handler


async def apply_event(store: ViewStore, event: AnyEvent, seq: int) -> bool:
    """Project ``event`` (stream sequence ``seq``); False when it was applied before."""
    run_id = event.run_id if isinstance(event, RunEvent) else None
    return await store.apply(seq, run_id, partial(project, event, seq))


@dataclass
class AuditHandlers:
    store: ViewStore

    async def on_event(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        await apply_event(self.store, event, delivery.stream_seq)
        return []


def subject_table(prefix: str, handlers: AuditHandlers) -> dict[str, Handler]:
    """Subject -> handler: every subject of the event log goes to ``on_event``, so the
    durable consumer needs no filter and sees events in log order."""
    return {subject: handlers.on_event for subject in subjects.stream_subjects(prefix)}
