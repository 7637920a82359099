"""One run-flow suite, two buses: the in-memory bus and the real mesh answer the same calls.

A flow test asks for a ``flows`` fixture and speaks only through ``Flows``: submit a request,
answer an approval, read a run's events, the committed scene and the audit views. The
suite in tests/flows then runs once on ``MemoryFlows`` (every service's handlers on the
in-memory bus, ~0.1 s a test, in the fast subset) and once on ``MeshFlows`` (the real
nats-server, real Blender, the services as ``blendmesh up`` runs them; marked
integration), as FastStream's TestBroker runs one test on its fake and real brokers. What
only one bus can show (a Blender process, a wall-clock expiry, the bus's own clock) stays
in that bus's own tests.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any, Protocol

import msgspec

from contracts import inspection
from contracts.events import AnyEvent, Executed, event_kind
from contracts.queries import RunDetail
from contracts.receipts import RunResult
from contracts.resolutions import Resolution
from services.audit import client as audit
from services.audit.app import BATCH
from services.audit.handlers import AuditHandlers
from services.audit.queries import with_facts
from services.audit.store import SqliteStore
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.client import SceneFiles
from services.runtime.nats.history import read_run
from services.runtime.nats.retry import poll
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus
from tests.support.memory_mesh import MemoryMesh

USER = "ana"  # who asks for every run of the suite
APPROVER = "ben"  # who may resolve ana's approvals on both buses
RUN_TIMEOUT = 120.0  # seconds a real run may take on a busy two-core machine
END_KINDS = frozenset({"run.completed", "run.failed"})  # a run has one of them, once


def op(
    op_id: str,
    tool: str,
    args: dict[str, Any],
    deps: list[str] | None = None,
    level: str = "safe_write",
) -> dict[str, Any]:
    """One operation of a plan as a client writes it (000 §OperationGraph)."""
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": deps or [],
        "safety_level": level,
    }


class Flows(Protocol):
    """What a run-flow test may ask of a bus; each answer is read as the doors read it."""

    name: str

    async def run(
        self, scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
    ) -> RunResult:
        """Submit ana's request and wait for the run to end or to wait for a person."""
        ...

    async def resolve(self, run_id: str, decision: Resolution, by: str = APPROVER) -> RunResult:
        """Answer the run's pending approval as ``MeshClient.resolve`` does."""
        ...

    async def history(self, run_id: str) -> list[AnyEvent]:
        """The run's events in log order."""
        ...

    async def read_inspection(self, name: str) -> bytes | None:
        """The inspection document an ``Executed`` names, as stored beside its revision."""
        ...

    def scene_file(self, scene: str) -> Path:
        """Where the scene's committed head is exported (``<home>/scenes/<id>.blend``)."""
        ...

    async def audit_run(self, run_id: str) -> RunDetail:
        """The audit views' detail of one run."""
        ...

    async def audit_views(self) -> dict[str, list[dict[str, Any]]]:
        """Every audit view's rows, as the live consumer built them."""
        ...

    async def audit_rebuilt(self) -> dict[str, list[dict[str, Any]]]:
        """Every audit view's rows, built again from the whole log."""
        ...


async def kinds(flows: Flows, run_id: str) -> list[str]:
    """The run's events by kind (``run.requested``...), in log order."""
    return [event_kind(e) for e in await flows.history(run_id)]


async def committed(flows: Flows, run_id: str) -> inspection.SceneInspection:
    """The inspection of the revision ``run_id`` committed: what a reader of it sees."""
    (executed,) = [e for e in await flows.history(run_id) if isinstance(e, Executed)]
    assert executed.inspection is not None, f"run {run_id} committed no inspection"
    data = await flows.read_inspection(executed.inspection)
    assert data is not None, f"the inspection {executed.inspection} is not stored"
    return inspection.decode(data)


async def scene_digest(flows: Flows, scene: str) -> str:
    """The sha256 of the scene's exported file: equal digests, an untouched scene."""
    data = await asyncio.to_thread(flows.scene_file(scene).read_bytes)
    return hashlib.sha256(data).hexdigest()


class MemoryFlows:
    """``Flows`` over ``MemoryMesh``: every delivery done before an answer returns."""

    name = "memory"

    def __init__(self, mesh: MemoryMesh, scenes_dir: Path) -> None:
        self.mesh = mesh
        self.scenes_dir = scenes_dir

    async def run(
        self, scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
    ) -> RunResult:
        return await self.mesh.run(scene, prompt, plan, user=USER, **kw)

    async def resolve(self, run_id: str, decision: Resolution, by: str = APPROVER) -> RunResult:
        return await self.mesh.resolve(run_id, decision, by=by)

    async def history(self, run_id: str) -> list[AnyEvent]:
        return await self.mesh.history(run_id)

    async def read_inspection(self, name: str) -> bytes | None:
        return await self.mesh.store.read_inspection(name)

    def scene_file(self, scene: str) -> Path:
        return self.scenes_dir / f"{scene}.blend"

    async def audit_run(self, run_id: str) -> RunDetail:
        assert self.mesh.views is not None, "the memory mesh was built without audit views"
        detail = await self.mesh.views.run(run_id)
        assert detail is not None, f"the audit views hold no run {run_id}"
        # The audit service answers a run query with this very conversion (audit/queries.py).
        detail["timeline"] = [with_facts(entry) for entry in detail["timeline"]]
        return msgspec.convert(detail, RunDetail)

    async def audit_views(self) -> dict[str, list[dict[str, Any]]]:
        assert self.mesh.views is not None, "the memory mesh was built without audit views"
        return await self.mesh.views.dump()

    async def audit_rebuilt(self) -> dict[str, list[dict[str, Any]]]:
        """A second audit consumer bound after the runs: it is delivered the whole log at
        once, in batches, where the live one applied each event between the others'."""
        again = await SqliteStore.open(self.scenes_dir.parent / "audit-again.db")
        try:
            handlers = AuditHandlers(again)
            self.mesh.bus.add(
                ConsumerSpec(
                    "audit-again",
                    [],
                    handlers.on_event,
                    batch=BATCH,
                    batch_handler=handlers.on_events,
                )
            )
            await self.mesh.bus.run_until_quiet()
            assert await again.last_seq() == len(self.mesh.bus.log)
            return await again.dump()
        finally:
            await again.close()


class MeshFlows:
    """``Flows`` over a running mesh, through a client's bus as the doors use it."""

    name = "nats"

    def __init__(self, mesh: Mesh, bus: Bus) -> None:
        self.mesh = mesh
        self.bus = bus
        self.client = MeshClient(bus)

    async def run(
        self, scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
    ) -> RunResult:
        request = build_request(user=USER, scene_id=scene, prompt=prompt, plan=plan, **kw)
        return await self._settled(await self.client.run(request, timeout=RUN_TIMEOUT))

    async def resolve(self, run_id: str, decision: Resolution, by: str = APPROVER) -> RunResult:
        done = await self.client.resolve(run_id, decision, by, timeout=RUN_TIMEOUT)
        return await self._settled(done)

    async def _settled(self, result: RunResult) -> RunResult:
        """``result`` once its run's log holds its last event, as the memory bus answers
        only when nothing is left to deliver: a denial already folds as failed, while the
        planner's ``run.failed`` and the audit views' rows of it may still be on the way."""
        if result.status == "awaiting_confirmation":
            return result
        ended = await poll(
            lambda: self.history(result.run_id),
            lambda events: bool(END_KINDS & {event_kind(e) for e in events}),
            RUN_TIMEOUT,
            pause=0.05,
        )
        assert END_KINDS & {event_kind(e) for e in ended}, f"run {result.run_id} never ended"
        return result

    async def history(self, run_id: str) -> list[AnyEvent]:
        return list(await read_run(self.bus.js, self.bus.prefix, run_id))

    async def read_inspection(self, name: str) -> bytes | None:
        return await SceneFiles(self.bus.js, self.bus.prefix).inspection(name)

    def scene_file(self, scene: str) -> Path:
        return self.mesh.settings.scenes_dir / f"{scene}.blend"

    async def audit_run(self, run_id: str) -> RunDetail:
        return await audit.query_run(self.bus.nc, self.bus.prefix, run_id)

    async def audit_views(self) -> dict[str, list[dict[str, Any]]]:
        return await audit.query_dump(self.bus.nc, self.bus.prefix)

    async def audit_rebuilt(self) -> dict[str, list[dict[str, Any]]]:
        await audit.rebuild(self.bus.nc, self.bus.prefix)
        return await audit.query_dump(self.bus.nc, self.bus.prefix)
