"""Cancelling a run, one rule for every door: the event that asks, and when there is
nothing left to stop. The caller checks who asks first (the run's owner or an approver,
as for an approval); ``cancel_of`` is the rule, ``cancel_run`` reads, publishes, follows.

A run has one cancel: its id derives from the run's request, so two people cancelling at
once write one event (JetStream's duplicate window drops the second), and a cancel
asked again returns the one in the log.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from contracts.events import AnyEvent, CancelRequested, RunRequested, follow
from contracts.fold import FINAL, fold_run, latest
from services.doors.core.client import ClientError, MeshClient, OnEvent
from services.doors.core.run_view import RunView
from services.runtime.nats.history import read_run

MAX_REASON = 500  # as CancelRequested.reason holds


class RunOver(ClientError):
    """The run ended before the cancel reached it: nothing is left to stop."""


class NoSuchRun(ClientError):
    """There is no run with that id (or it is not the caller's: the caller cannot tell)."""


def cancel_of(events: Sequence[AnyEvent], by: str, reason: str, now: float) -> CancelRequested:
    """The cancel of the run ``events`` tell, asked by ``by``: the one in the log when
    someone asked already, else a new one to publish. Raises ``RunOver`` when the run
    completed or failed, and ``NoSuchRun`` when ``events`` hold no request."""
    requested = next((e for e in events if isinstance(e, RunRequested)), None)
    result = fold_run(events)
    if requested is None or result is None:
        raise NoSuchRun("there is no such run; `blendmesh runs` lists yours")
    asked = latest(events, CancelRequested)
    if result.status in FINAL:
        by_whom = f" (cancelled by {asked.cancelled_by})" if asked is not None else ""
        raise RunOver(
            f"run {requested.run_id} is {result.status} already{by_whom}: nothing to cancel"
        )
    if asked is not None:
        return asked
    if len(reason) > MAX_REASON:
        raise ClientError(f"the reason has {len(reason)} characters; give at most {MAX_REASON}")
    # Derived from the request: one id per run, whoever asks (the module's docstring).
    return follow(requested, CancelRequested, now, cancelled_by=by, reason=reason)


async def cancel_run(
    client: MeshClient,
    run_id: str,
    by: str,
    reason: str = "",
    on_event: OnEvent | None = None,
    timeout: float = 600.0,
) -> RunView:
    """Cancel ``run_id`` as ``by`` and follow it to its end (``MeshClient.cancel``)."""
    events = await read_run(client.bus.js, client.bus.prefix, run_id)
    cancel = cancel_of(events, by, reason, time.time())
    return await client.cancel(cancel, on_event, timeout)


async def ask_cancel(client: MeshClient, run_id: str, by: str, reason: str = "") -> CancelRequested:
    """Cancel ``run_id`` as ``by`` without following it (an MCP task's ``tasks/cancel``
    answers at once; the run's view says later how it ended)."""
    events = await read_run(client.bus.js, client.bus.prefix, run_id)
    cancel = cancel_of(events, by, reason, time.time())
    await client.bus.publisher.publish(cancel)
    return cancel
