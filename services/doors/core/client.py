"""Talking to a mesh as a client: submit a run, follow it live, resolve an approval.

The CLI uses it today; the HTTP gateway uses the same calls. A run's state is always
folded from its events in the log, never kept on the side.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    CancelRequested,
    Denied,
    PlanRejected,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunRequested,
    decode_event,
    follow,
)
from contracts.fold import fold_run, is_terminal
from contracts.python_steps import CODE_SHA256_RE
from contracts.receipts import RunResult
from contracts.resolutions import Resolution, canonical_resolution
from contracts.trusted_code import quote_problem
from services.doors.core.quota import RunQuota
from services.doors.core.run_view import RunView
from services.doors.core.run_watch import Waiting, Watch
from services.runtime.nats import delivered
from services.runtime.nats.history import read_run
from services.runtime.service import tracing
from services.runtime.service.host import Bus

OnEvent = Callable[[AnyEvent], None]
# Events after which a run may be over (or waiting for a person).
ENDINGS = (RunCompleted, RunFailed, PlanRejected, Denied, ApprovalRequested)


class ClientError(BlendmeshError):
    """A request the mesh cannot act on; the message says why and what to do."""


class RequestMismatch(ClientError):
    """A resolution quotes a request hash that is not the pending request's (HTTP 409)."""


class CodeNotQuoted(ClientError):
    """An approval of trusted Python does not quote its code's hash (HTTP 409)."""


MAX_QUOTED_CODE = 500  # as many hashes as ApprovalResolved.code_sha256 holds


def _quoted(code_sha256: Sequence[str] | None) -> list[str]:
    """The quoted hashes once each; a malformed one would be dropped by the policy, so it
    is refused here, naming it."""
    quoted = list(dict.fromkeys(code_sha256 or ()))
    if len(quoted) > MAX_QUOTED_CODE:
        raise ClientError(f"an approval quotes at most {MAX_QUOTED_CODE} code hashes")
    for value in quoted:
        if not CODE_SHA256_RE.match(value):
            raise ClientError(
                f"code hash {value[:80]!r} is not 'sha256:' and 64 lowercase hex digits"
            )
    return quoted


def _run_attributes(event: RunEvent) -> dict[str, str]:
    return {
        "blendmesh.run_id": event.run_id,
        "blendmesh.request_id": event.request_id,
        "blendmesh.thread_id": event.thread_id,
        "blendmesh.user": event.user,
    }


class RunTimedOut(ClientError):
    """The run did not end within the time asked; it goes on in the mesh."""


class MeshClient:
    def __init__(self, bus: Bus, watch: Watch | None = None, quota: RunQuota | None = None) -> None:
        self.bus = bus
        self.watch = watch  # None: follow in silence (the gateway answers with a status)
        self.quota = quota  # None: no limit on a user's runs at once (one person's CLI)

    async def run(
        self, request: RunRequested, on_event: OnEvent | None = None, timeout: float = 600.0
    ) -> RunResult:
        """Submit a request and follow it until it completes, fails or waits for a person.
        ``on_event`` hears every event of the run, from its request on (``Gathered``
        builds the run's view from them).

        The span opened here is the root of the run's trace: every service's span joins it
        through the trace context in the events' headers.
        """
        if self.quota is not None:  # before anything enters the log
            await self.quota.check(self.bus.nc, self.bus.prefix, request.user)
        attributes = {**_run_attributes(request), "blendmesh.scene_id": request.scene_id}
        with tracing.tracer().start_as_current_span(
            "blendmesh run", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            follower = await self._publish_following(request.run_id, request)
            view = await self._follow(request.run_id, follower, on_event, timeout)
            span.set_attribute("blendmesh.status", view.status)
            return view.result

    async def submit(self, request: RunRequested) -> None:
        """Submit a request and return once it is in the log, without following it: for a
        door that answers with the run's id at once (an MCP task) and reads its view later."""
        if self.quota is not None:
            await self.quota.check(self.bus.nc, self.bus.prefix, request.user)
        attributes = {**_run_attributes(request), "blendmesh.scene_id": request.scene_id}
        with tracing.tracer().start_as_current_span(
            "blendmesh run", kind=SpanKind.CLIENT, attributes=attributes
        ):
            await self.bus.publisher.publish(request)

    async def resolve(
        self,
        run_id: str,
        decision: Resolution,
        user: str,
        on_event: OnEvent | None = None,
        timeout: float = 600.0,
        request_hash: str | None = None,
        code_sha256: Sequence[str] | None = None,
    ) -> RunResult:
        """Approve or reject the pending operations of ``run_id`` and follow the run
        (``resolve_view`` says how)."""
        view = await self.resolve_view(
            run_id, decision, user, on_event, timeout, request_hash, code_sha256
        )
        return view.result

    async def resolve_view(
        self,
        run_id: str,
        decision: Resolution,
        user: str,
        on_event: OnEvent | None = None,
        timeout: float = 600.0,
        request_hash: str | None = None,
        code_sha256: Sequence[str] | None = None,
    ) -> RunView:
        """Approve or reject the pending operations of ``run_id`` and follow the run.

        ``request_hash`` is the hash of the request the person saw; when it is not the
        pending request's, nothing is published. None answers whatever is pending (CLI).
        ``code_sha256`` are the hashes of the trusted Python the person read: an approval
        that misses one is refused (``CodeNotQuoted``) and nothing is published.
        """
        resolution = await self._resolution(run_id, decision, user, request_hash, code_sha256)
        if resolution is None:
            return await self.resolved_view(run_id, on_event, timeout)
        # The approval continues the run's trace, from where the policy asked for it.
        with tracing.tracer().start_as_current_span(
            "blendmesh approval",
            context=await self._trace_context(run_id, "approval_requested"),
            kind=SpanKind.CLIENT,
            attributes=_run_attributes(resolution),
        ) as span:
            span.set_attributes(
                {
                    "blendmesh.approval_id": resolution.approval_id,
                    "blendmesh.decision": resolution.decision,
                }
            )
            follower = await self._publish_following(run_id, resolution)
            view = await self._follow(
                run_id, follower, on_event, timeout, after=resolution.event_id
            )
            span.set_attribute("blendmesh.status", view.status)
            return view

    async def resolved_view(
        self, run_id: str, on_event: OnEvent | None = None, timeout: float = 600.0
    ) -> RunView:
        """The outcome of ``run_id``'s latest resolution, for one that lost the race to
        it: exactly what the winner will see. Followed from that resolution, since the
        approval it answered is earlier in the log and is no end any more."""
        sub = await self._subscribe(run_id)
        return await self._follow(
            run_id, sub, on_event, timeout, after=await self._last_resolution(run_id)
        )

    async def answer(
        self,
        run_id: str,
        decision: Resolution,
        user: str,
        request_hash: str | None = None,
        code_sha256: Sequence[str] | None = None,
    ) -> None:
        """Approve or reject like ``resolve_view``, without following the run: for a door
        that reads the run's view later (an MCP task's ``tasks/update``)."""
        resolution = await self._resolution(run_id, decision, user, request_hash, code_sha256)
        if resolution is None:
            return  # another resolution won the race: the run goes on with it
        with tracing.tracer().start_as_current_span(
            "blendmesh approval",
            context=await self._trace_context(run_id, "approval_requested"),
            kind=SpanKind.CLIENT,
            attributes=_run_attributes(resolution),
        ):
            await self.bus.publisher.publish(resolution)

    async def _resolution(
        self,
        run_id: str,
        decision: Resolution,
        user: str,
        request_hash: str | None,
        code_sha256: Sequence[str] | None,
    ) -> ApprovalResolved | None:
        """The resolution to publish for ``run_id``'s pending approval (the checks
        ``resolve_view`` names); None when another resolution answered it already."""
        quoted = _quoted(code_sha256)
        decision = canonical_resolution(decision)  # the log carries one name per decision
        view = await self.view(run_id)
        if view is None:
            raise ClientError(f"there is no run {run_id}; `blendmesh runs` lists the runs")
        if view.status in ("completed", "failed"):
            raise ClientError(f"run {run_id} is {view.status}, not awaiting approval")
        pending = view.asked
        if pending is None:
            return None
        if request_hash is not None and request_hash != pending.request_hash:
            raise RequestMismatch(
                f"run {run_id} waits on a different request than the one answered; "
                "look at the pending approval again"
            )
        problem = quote_problem(pending.operations, quoted) if decision != "reject" else None
        if problem is not None:
            raise CodeNotQuoted(f"run {run_id}: {problem}")
        return follow(
            pending,
            ApprovalResolved,
            time.time(),
            approval_id=pending.approval_id,
            decision=decision,
            resolved_by=user,
            request_hash=pending.request_hash,
            code_sha256=quoted if decision != "reject" else [],
        )

    async def _last_resolution(self, run_id: str) -> str | None:
        """The event id of the run's latest approval resolution, if it has one."""
        events = await read_run(self.bus.js, self.bus.prefix, run_id)
        resolutions = [e.event_id for e in events if isinstance(e, ApprovalResolved)]
        return resolutions[-1] if resolutions else None

    async def result(self, run_id: str) -> RunResult | None:
        """The run as its events fold today; None when there is no such run."""
        view = await self.view(run_id)
        return view.result if view is not None else None

    async def view(self, run_id: str) -> RunView | None:
        """The run as a door answers it today (``RunView``); None when there is no such run."""
        return RunView.of(await read_run(self.bus.js, self.bus.prefix, run_id))

    async def requested(self, run_id: str) -> RunRequested | None:
        """A run's RunRequested (who asked, on which scene), read directly by its subject."""
        try:
            msg = await self.bus.js.get_last_msg(
                subjects.stream_name(self.bus.prefix),
                subjects.run_events(self.bus.prefix, run_id, "requested"),
            )
        except NotFoundError:
            return None
        event = decode_event(msg.data or b"")
        return event if isinstance(event, RunRequested) else None

    async def follow(
        self, run_id: str, on_event: OnEvent | None = None, timeout: float = 600.0
    ) -> RunResult:
        """Follow a run that is under way until it ends or waits for approval again."""
        sub = await self._subscribe(run_id)
        return (await self._follow(run_id, sub, on_event, timeout)).result

    async def cancel(
        self, cancel: CancelRequested, on_event: OnEvent | None = None, timeout: float = 600.0
    ) -> RunView:
        """Publish ``cancel`` (``cancels.cancel_of`` builds it) and follow the run to its
        end: failed ``RUN_CANCELLED``, or what it reached before the cancel did."""
        follower = await self._publish_following(cancel.run_id, cancel)
        return await self._follow(cancel.run_id, follower, on_event, timeout, after=cancel.event_id)

    async def _trace_context(self, run_id: str, kind: str) -> Context | None:
        """The trace context stored with the run's last ``kind`` event, if there is one."""
        try:
            msg = await self.bus.js.get_last_msg(
                subjects.stream_name(self.bus.prefix),
                subjects.run_events(self.bus.prefix, run_id, kind),
            )
        except NotFoundError:
            return None
        return tracing.extract(msg.headers)

    async def _publish_following(
        self, run_id: str, event: RunRequested | ApprovalResolved | CancelRequested
    ) -> JetStreamContext.PushSubscription:
        """Publish ``event`` while the run's follower is set up. The follower reads the
        run from its first event, so nothing stored meanwhile is missed."""
        subscribing = asyncio.ensure_future(self._subscribe(run_id))
        try:
            await self.bus.publisher.publish(event)
        except BaseException:
            with contextlib.suppress(Exception):
                await (await subscribing).unsubscribe()
            raise
        return await subscribing

    async def _subscribe(self, run_id: str) -> JetStreamContext.PushSubscription:
        return await self.bus.js.subscribe(
            subjects.run_events(self.bus.prefix, run_id),
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            stream=subjects.stream_name(self.bus.prefix),
        )

    async def _follow(
        self,
        run_id: str,
        sub: JetStreamContext.PushSubscription,
        on_event: OnEvent | None,
        timeout: float,
        after: str | None = None,
    ) -> RunView:
        """The view of the run's events once it is over or waits for a person (again,
        after ``after``, the resolution just published)."""
        events: list[AnyEvent] = []
        seen_after = after is None
        # Not a retry (services.runtime.nats.retry): nothing is tried again, the run is followed.
        deadline = asyncio.get_running_loop().time() + timeout
        wait = Waiting(run_id, self.watch)
        try:
            while True:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    raise RunTimedOut(wait.timed_out(events, timeout))
                try:
                    msg = await sub.next_msg(timeout=min(remaining, 1.0))
                except TimeoutError:
                    await wait.check(events)
                    continue
                # Only the run's own subjects count: anything else in this inbox was put
                # there by a consumer someone else aimed at it (ADR 0015).
                event = delivered.run_event(self.bus.prefix, msg.subject, msg.data, run_id)
                if event is None:
                    continue
                events.append(event)
                wait.moved_now()
                seen_after = seen_after or event.event_id == after
                if on_event is not None and seen_after:
                    on_event(event)
                if not isinstance(event, ENDINGS):
                    continue  # folding on every event would make following a run quadratic
                result = fold_run(events)
                # After a resolution, the approval we just answered is not the end.
                waiting_again = (
                    after is not None
                    and result is not None
                    and (result.status == "awaiting_confirmation")
                )
                if result is not None and seen_after and is_terminal(result) and not waiting_again:
                    return RunView.build(result, events)
        finally:
            await sub.unsubscribe()
