"""The whole mesh's handlers on the in-memory bus: planner (rules and plan backends),
policy (the repository's Cedar policies), executor (the fake bridge and in-memory
ports), guardians (the default gates file) and audit (its SQLite views in a temporary
file), wired as each service's composition root (services/*/app.py) wires them, with
the same durables, filters and delivery limits.

For tests whose subject is the handlers' logic across services: what events a request
leads to, in what order, with what contents. Integration tests keep the real nats-server
and Blender.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    CancelRequested,
    RunRequested,
    event_kind,
    follow,
)
from contracts.fold import fold_run
from contracts.receipts import RunResult
from contracts.resolutions import Resolution
from contracts.tools import ToolCatalog
from services.audit import app as audit_app
from services.audit.handlers import AuditHandlers
from services.audit.store import SqliteStore
from services.doors.core.cancels import cancel_of
from services.doors.core.requests import build_request
from services.executor import app as executor_app
from services.executor.adapters.exports import SceneExports
from services.executor.domain.ports import INSPECTION_SUFFIX
from services.executor.domain.runner import PlanRunner
from services.executor.domain.session import Scenes
from services.executor.handlers import ExecutorHandlers
from services.executor.memory import (
    MemoryJournal,
    MemoryLeases,
    MemorySceneStore,
    MemorySceneSummaries,
    StaticCatalog,
)
from services.guardians import app as guardians_app
from services.guardians.config import DEFAULT, GatesConfig, load
from services.guardians.handlers import GuardiansHandlers
from services.planner import app as planner_app
from services.planner.handlers import PlannerHandlers
from services.policy import app as policy_app
from services.policy.cedar import CedarPolicy
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from services.runtime.service.settings import Settings
from tests.support.catalog_fixture import CATALOG
from tests.support.fake_bridge import FakeBridge
from tests.support.memory_bus import MemoryBus
from tests.support.runner_contract import PROFILE

USER = "ana"
APPROVERS = frozenset({"ben"})  # who besides a run's own user may resolve its approvals


@dataclass
class MemoryMesh:
    """The handlers, their in-memory ports and the bus they share."""

    bus: MemoryBus
    bridge: FakeBridge
    store: MemorySceneStore
    summaries: MemorySceneSummaries
    allowlist: MemoryAllowlist
    journal: MemoryJournal
    views: SqliteStore | None
    planner: PlannerHandlers
    policy: PolicyHandlers
    executor: ExecutorHandlers
    guardians: GuardiansHandlers

    def request(
        self, scene: str = "s1", prompt: str | None = None, plan: Any = None, **kw: Any
    ) -> RunRequested:
        """A request as the doors build it (``build_request``), timed by the bus's clock."""
        planner = kw.pop("planner", "plan" if plan is not None else "rules")
        user = kw.pop("user", USER)
        made = build_request(
            user=user, scene_id=scene, prompt=prompt, plan=plan, planner=planner, **kw
        )
        return msgspec.structs.replace(made, at=self.bus.clock())

    async def run(
        self, scene: str = "s1", prompt: str | None = None, plan: Any = None, **kw: Any
    ) -> RunResult:
        """Submit a request and deliver until the bus is quiet; the run as it folds then."""
        return await self.submit(self.request(scene, prompt, plan, **kw))

    async def submit(self, request: RunRequested) -> RunResult:
        await self.bus.publish(request)
        await self.bus.run_until_quiet()
        return await self.result(request.run_id)

    async def resolve(self, run_id: str, decision: Resolution, by: str = "ben") -> RunResult:
        """Answer the run's pending approval as ``MeshClient.resolve`` does."""
        events = await self.bus.history(run_id)
        pending = next(e for e in reversed(events) if isinstance(e, ApprovalRequested))
        resolution = follow(
            pending,
            ApprovalResolved,
            self.bus.clock(),
            approval_id=pending.approval_id,
            decision=decision,
            resolved_by=by,
            request_hash=pending.request_hash,
        )
        await self.bus.publish(resolution)
        await self.bus.run_until_quiet()
        return await self.result(run_id)

    async def cancel(self, run_id: str, by: str = "ana", reason: str = "") -> RunResult:
        """Cancel the run as every door does (``cancels.cancel_of``), then deliver."""
        await self.bus.publish(self.cancel_event(await self.history(run_id), by, reason))
        await self.bus.run_until_quiet()
        return await self.result(run_id)

    def cancel_event(self, events: list[AnyEvent], by: str, reason: str = "") -> CancelRequested:
        return cancel_of(events, by, reason, self.bus.clock())

    async def result(self, run_id: str) -> RunResult:
        result = fold_run(await self.bus.history(run_id))
        assert result is not None, f"run {run_id} has no request in the log"
        return result

    async def kinds(self, run_id: str) -> list[str]:
        """The run's events by kind (``run.requested``...), in log order."""
        return [event_kind(e) for e in await self.history(run_id)]

    async def history(self, run_id: str) -> list[AnyEvent]:
        return await self.bus.history(run_id)

    async def close(self) -> None:
        if self.views is not None:
            await self.views.close()


async def memory_mesh(
    tmp: Path,
    *,
    prefix: str = "bm",
    approvers: frozenset[str] = APPROVERS,
    approval_ttl: float = 3600.0,
    gates: GatesConfig | None = None,
    catalog: ToolCatalog | None = CATALOG,
    audit: bool = True,
) -> MemoryMesh:
    """Every service's handlers on one ``MemoryBus``; ``tmp`` holds the scene store's
    files, the exported scenes, the guardians' folders and the audit views."""
    settings = Settings(home=tmp / "home", prefix=prefix, approval_ttl=approval_ttl)
    bus = MemoryBus(prefix)
    bridge = FakeBridge()
    # The fake has no import_asset or render_view: no tool of CATALOG reaches them.
    blender: Any = bridge
    store = MemorySceneStore(tmp / "store")
    summaries = MemorySceneSummaries()
    allowlist = MemoryAllowlist()
    journal = MemoryJournal()
    tools = StaticCatalog(catalog)

    async def owner(scene_id: str) -> str | None:
        head = await store.head(scene_id)
        return (head.owner or None) if head is not None else None

    async def revision(scene_id: str, number: int) -> bytes | None:
        # MemorySceneStore names revision n of a scene "<scene>-<n>.blend".
        return await store.read_inspection(f"{scene_id}-{number}.blend{INSPECTION_SUFFIX}")

    def published() -> ToolCatalog:
        assert catalog is not None, "an executor always has its catalog"
        return catalog

    planner = PlannerHandlers(
        catalog=tools,
        clock=bus.clock,
        history=bus.history,
        kinds=bus.kinds,
        max_operations=settings.max_operations,
        scenes=summaries,
    )
    policy = PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=tools,
        history=bus.history,
        allowlist=allowlist,
        scene_owner=owner,
        clock=bus.clock,
        workspace=settings.home,
        approval_ttl=settings.approval_ttl,
        approvers=lambda: approvers,
        kinds=bus.kinds,
    )
    scenes = Scenes(
        store=store,
        leases=MemoryLeases(clock=bus.clock),  # a lease expires on the bus's time
        files=SceneExports(settings.scenes_dir),
        work_dir=tmp / "work",
        bridge=blender,
    )
    runner = PlanRunner(
        bridge=blender,
        scenes=scenes,
        journal=journal,
        catalog=published,
        profile=lambda: PROFILE,
        op_timeout=settings.op_timeout,
        summaries=summaries,
        clock=bus.clock,
        cancels=partial(bus.last_of, kind="cancel_requested"),
    )
    executor = ExecutorHandlers(
        runner=runner,
        progress=bus.pipeline,
        history=bus.history,
        catalog_version=lambda: published().version,
        clock=bus.clock,
    )
    guardians = GuardiansHandlers(
        config=gates or load(DEFAULT),
        artifact=store.read_inspection,
        work_dir=tmp / "guardians",
        clock=bus.clock,
        revision=revision,
    )
    views = await SqliteStore.open(tmp / "audit.db") if audit else None
    # The services' own consumer lists: what production runs, so the two cannot drift.
    specs = [
        *planner_app.consumers(planner, settings, prefix),
        *policy_app.consumers(policy, settings, prefix),
        *executor_app.consumers(executor, settings, prefix),
        *guardians_app.consumers(guardians, settings, prefix),
    ]
    if views is not None:
        specs += audit_app.consumers(AuditHandlers(views), settings)
    for spec in specs:
        bus.add(spec)
    return MemoryMesh(
        bus=bus,
        bridge=bridge,
        store=store,
        summaries=summaries,
        allowlist=allowlist,
        journal=journal,
        views=views,
        planner=planner,
        policy=policy,
        executor=executor,
        guardians=guardians,
    )
