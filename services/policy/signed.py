"""Signed approval resolutions from programs outside the mesh (docs/adr/0010).

The policy resolves approvals, so it checks a signed resolution: a registered key signed
it, on its run's subject, for the user named in ``resolved_by``, and that user may answer
this run (its own user, or one the registry marks ``approver``). A resolution that holds
is passed on as the run's ``run.approval_resolved`` and handled like any other. One that
does not changes nothing: the approval stays pending, and the refusal is logged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from contracts import subjects
from contracts.events import AnyEvent, ApprovalResolved, Event, RunRequested
from services.runtime.consumer import Delivery, Handler
from services.runtime.identity import SIGNER, IdentityRefused, may_resolve
from services.runtime.signed import log, passed_on, routed, shaped, signed_by
from services.runtime.users import UsersFile

RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]


@dataclass
class SignedResolutions:
    users: UsersFile
    history: RunHistory

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        run_id = subjects.signed_run_id(delivery.subject)
        if run_id is None:
            return []
        try:
            resolution = shaped(delivery, event, ApprovalResolved)
            signer = signed_by(self.users, delivery)
            if resolution.resolved_by != signer.name:
                raise IdentityRefused(
                    f"the resolution claims resolved_by {resolution.resolved_by!r} but key "
                    f"{delivery.headers.get(SIGNER)} signs for {signer.name!r}"
                )
            owner = await self._run_user(run_id)
            if owner is None:
                raise IdentityRefused(f"there is no run {run_id} to resolve")
            if not may_resolve(signer, owner):
                raise IdentityRefused(
                    f"{signer.name!r} may not resolve approvals of {owner!r}'s runs: only "
                    "the run's user or an approver (`blendmesh users add NAME --key KEY "
                    "--approver`) may"
                )
        except IdentityRefused as exc:
            log.warning("refused the signed resolution on %s: %s", delivery.subject, exc)
            return []
        return [passed_on(resolution)]

    async def _run_user(self, run_id: str) -> str | None:
        """Whom the run belongs to: the user its request, as the mesh took it, names."""
        events = await self.history(run_id)
        requested = next((e for e in events if isinstance(e, RunRequested)), None)
        return requested.user if requested is not None else None

    def around(self, rest: Handler) -> Handler:
        """The policy's handler: signed resolutions come here first."""
        return routed(self.handle, rest)
