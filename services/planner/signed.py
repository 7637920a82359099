"""Signed run requests from programs outside the mesh (docs/adr/0010).

The planner is the first reader of a request, so it checks a signed one: a registered key
signed it, on its run's subject, for the user it names. A request that holds is passed on
as the run's ``run.requested``, which the planner then plans like any other; one that does
not ends its run failed, naming what was wrong, and nothing is planned.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from contracts import subjects
from contracts.events import (
    AnyEvent,
    DeadLettered,
    Event,
    RunEvent,
    RunFailed,
    RunRequested,
    derive_event_id,
)
from contracts.failures import failure
from services.planner.outcomes import unreadable_request
from services.runtime.consumer import Delivery, Handler
from services.runtime.identity import SIGNER, IdentityRefused
from services.runtime.signed import log, passed_on, routed, shaped, signed_by
from services.runtime.users import UsersFile

RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]
UNVERIFIED = "unverified"  # the user of a refused run whose signature did not hold


@dataclass
class SignedRequests:
    users: UsersFile
    history: RunHistory
    clock: Callable[[], float] = field(default=time.time)

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        run_id = subjects.signed_run_id(delivery.subject)
        if run_id is None:
            return []
        if await self.history(run_id):
            # Its run has begun: this is a replay (past the duplicate window) or a clash
            # of run ids, and a run gets one request.
            log.warning("signed request on %s ignored: run %s exists", delivery.subject, run_id)
            return []
        verified: str | None = None
        try:
            request = shaped(delivery, event, RunRequested)
            verified = signed_by(self.users, delivery).name
            if request.user != verified:
                raise IdentityRefused(
                    f"the request claims user {request.user!r} but key "
                    f"{delivery.headers.get(SIGNER)} signs for {verified!r}"
                )
        except IdentityRefused as exc:
            log.warning("refused the signed request on %s: %s", delivery.subject, exc)
            return [self._refused(event, delivery.subject, verified, str(exc))]
        return [passed_on(request)]

    def _refused(self, event: AnyEvent, subject: str, user: str | None, why: str) -> RunFailed:
        """The run's end. Only ids the signature vouches for are kept: an unverified
        message must not put a run in someone's name or conversation. The id comes from
        the subject too: one message refused on two runs' subjects ends both."""
        run_id = subjects.signed_run_id(subject) or ""
        contract = failure(
            "POLICY_BLOCKED",
            f"Sign the request with a key registered for its user ({why[:300]})",
            recoverable=False,
        )
        return RunFailed(
            event_id=derive_event_id(f"{subject}/{event.event_id}", "run.failed"),
            at=self.clock(),
            run_id=run_id,
            request_id=event.request_id if isinstance(event, RunEvent) else run_id,
            thread_id=run_id,
            user=user or UNVERIFIED,
            causation_id=event.event_id,
            failure=contract,
            message=f"the signed request was refused, so the run ends here: {why}",
        )

    async def on_unreadable(self, letter: DeadLettered) -> Sequence[Event]:
        """A signed request that did not match its schema: its run, if it has not begun,
        ends failed with the reason, as an unreadable request on the doors' subject does."""
        run_id = subjects.signed_run_id(letter.subject)
        if run_id is None or letter.consumer != "planner" or await self.history(run_id):
            return []
        unreadable = unreadable_request(letter, run_id, self.clock())
        if unreadable is None:
            return []
        return [msgspec.structs.replace(unreadable, user=UNVERIFIED, thread_id=run_id)]

    def around(self, rest: Handler) -> Handler:
        """The planner's handler: signed requests, and their dead letters, come here first."""
        signed = routed(self.handle, rest)

        async def handle(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
            if isinstance(event, DeadLettered) and subjects.signed_run_id(event.subject):
                return await self.on_unreadable(event)
            return await signed(event, delivery)

        return handle
