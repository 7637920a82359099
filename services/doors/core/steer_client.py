"""Re-runs, forks and bulk replays as every door makes them (issue 42, ADR 0063): read the
original run from the log, check it is the caller's, ask the scene where it stands, and
build the new run's request through ``build_request`` like any other run. The rules live
in ``steering.py``; this module only reads what they need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from contracts import subjects
from contracts.events import RunRequested
from contracts.queries import MAX_RUNS, RunRow
from contracts.session import BUS, HostProfile
from services.audit import client as audit
from services.doors.core import steering
from services.doors.core.ownership import owns
from services.doors.core.requests import build_request, new_id
from services.doors.core.steering import (
    MAX_REPLAY,
    NoRun,
    Original,
    Steered,
    SteerInvalid,
    SteerRefused,
)
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.executor.client import SceneFiles

Status = Literal["completed", "failed"]


class ReplayFilter(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which of a user's ended runs a bulk replay selects: created within [since, until]
    (seconds since the epoch), of one status, failed with one error code; at most
    ``limit``, oldest first, as they first ran."""

    since: float | None = None
    until: float | None = None
    status: Status | None = None
    error_code: str | None = None
    limit: int = 10

    def check(self) -> None:
        if not 1 <= self.limit <= MAX_REPLAY:
            raise SteerInvalid(f"a replay selects 1 to {MAX_REPLAY} runs, not {self.limit}")
        if self.since is not None and self.until is not None and self.since > self.until:
            raise SteerInvalid("the replay's --since comes after its --until; swap them")
        if self.error_code is not None and not 1 <= len(self.error_code) <= 64:
            raise SteerInvalid("an error code has 1 to 64 characters, as `blendmesh runs` shows")

    def selects(self, row: RunRow) -> bool:
        return (
            row.state in ("completed", "failed")
            and (self.since is None or row.created_at >= self.since)
            and (self.until is None or row.created_at <= self.until)
            and (self.status is None or row.state == self.status)
            and (self.error_code is None or row.error_code == self.error_code)
        )


@dataclass(frozen=True)
class Replayed:
    """One selected run in a replay: the re-run it gets, or why it gets none."""

    run_id: str
    steered: Steered | None = None
    refused: str = ""
    request: RunRequested | None = None


@dataclass
class Steering:
    """The steering moves of one door, as the user that door authenticated."""

    bus: Bus
    settings: Settings
    host: HostProfile = BUS

    async def original(self, run_id: str, user: str) -> Original:
        """``user``'s run ``run_id``; another user's run answers as a missing one does."""
        try:
            subjects.check_token(run_id, "run id")
        except ValueError as exc:
            raise SteerInvalid(f"{exc}; `blendmesh runs` lists the runs") from None
        found = Original.of(await read_run(self.bus.js, self.bus.prefix, run_id))
        if found is None or not owns(found.requested.user, user):
            raise NoRun(f"no run {run_id}; `blendmesh runs` lists the runs")
        return found

    async def rerun(
        self,
        run_id: str,
        user: str,
        from_op: int,
        plan: Any = None,
        pre_approved: bool = False,
        kind: Literal["rerun", "replay"] = "rerun",
    ) -> tuple[RunRequested, Steered]:
        original = await self.original(run_id, user)
        head = await self._files().head(original.requested.scene_id)
        revision = head.revision if head is not None else None
        steered = steering.rerun(original, from_op, revision, plan, kind)
        return self._request(original, steered, user, pre_approved), steered

    async def fork(
        self,
        run_id: str,
        user: str,
        plan: Any = None,
        pre_approved: bool = False,
        from_op: int = 1,
    ) -> tuple[RunRequested, Steered]:
        original = await self.original(run_id, user)
        steering.ended_with_a_plan(original, "fork")
        history = await self._files().history(original.requested.scene_id)
        started = steering.parent_revision(original, history, from_op)
        steered = steering.fork(original, started, new_id("req"), plan, from_op)
        return self._request(original, steered, user, pre_approved), steered

    async def select(self, user: str, chosen: ReplayFilter) -> list[RunRow]:
        """The runs a replay's filter selects among ``user``'s, oldest first."""
        chosen.check()
        rows = await audit.query_runs(self.bus.nc, self.bus.prefix, MAX_RUNS, user=user)
        picked = [row for row in rows if owns(row.user, user) and chosen.selects(row)]
        return sorted(picked, key=lambda row: row.created_at)[: chosen.limit]

    async def replay(
        self, user: str, chosen: ReplayFilter, pre_approved: bool = False
    ) -> list[Replayed]:
        """What a replay of the selected runs does: each one's re-run from its first
        operation, or why it has none. A dry run stops here; a real one submits them."""
        out = []
        for row in await self.select(user, chosen):
            try:
                request, steered = await self.rerun(
                    row.run_id, user, 1, pre_approved=pre_approved, kind="replay"
                )
            except SteerRefused as exc:
                out.append(Replayed(row.run_id, refused=str(exc)))
                continue
            out.append(Replayed(row.run_id, steered, request=request))
        return out

    def _request(
        self, original: Original, steered: Steered, user: str, pre_approved: bool
    ) -> RunRequested:
        """The new run's request, checked like any door's (a ``ValueError`` naming what is
        too large or refused)."""
        return build_request(
            user=user,
            scene_id=steered.scene_id,
            plan=steered.plan,
            thread_id=original.requested.thread_id,
            pre_approved=pre_approved,
            rollback_boundary=original.requested.rollback_boundary,
            max_operations=self.settings.max_operations,
            host=self.host,
            determinism=original.requested.determinism,
            origin=steered.origin,
        )

    def _files(self) -> SceneFiles:
        from services.executor.client import SceneFiles

        return SceneFiles(self.bus.js, self.bus.prefix)
