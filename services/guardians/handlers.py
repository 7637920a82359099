"""The guardians service's handler: judge each committed revision, publish the verdict."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from contracts import subjects
from contracts.events import AnyEvent, Event, Executed, GatesEvaluated, follow
from contracts.gates import GateEnvelope, awaits_gates
from services.guardians.baseline import KnownFaces, Revision, faces_before
from services.guardians.config import GatesConfig, params_for
from services.guardians.envelope import envelope
from services.guardians.judge import as_json, judge_counting
from services.runtime.service.consumer_spec import Delivery

Artifact = Callable[[str], Awaitable[bytes | None]]  # object name -> the artifact's bytes


@dataclass
class GuardiansHandlers:
    config: GatesConfig
    artifact: Artifact  # the executor's inspection artifacts (services/executor/client.py)
    work_dir: Path
    clock: Callable[[], float] = field(default=time.time)
    # The artifact of an earlier revision, so the polygon budget judges what a run adds;
    # without it the whole scene is judged.
    revision: Revision | None = None
    known: KnownFaces = field(default_factory=KnownFaces)  # faces of revisions judged

    async def on_executed(self, event: Executed) -> Sequence[Event]:
        if not awaits_gates(event) or event.inspection is None or event.revision is None:
            return []
        data = await self.artifact(event.inspection)
        if data is None:
            # Fail closed: a revision nobody can inspect never passes its gates.
            return [
                self._verdict(
                    event,
                    event.revision,
                    "{}",
                    GateEnvelope(
                        success=False,
                        failed_gates=["INSPECTION_MISSING"],
                        messages=[f"the inspection artifact {event.inspection} is missing"],
                    ),
                )
            ]
        ids = list(self.config.guardians)
        name = f"{event.scene_id}-{event.revision:08d}"
        before = None
        if self.revision is not None:
            before = await faces_before(self.revision, event.scene_id, event.revision, self.known)
        params = params_for(self.config, event.scene_id, before)
        result, faces = await asyncio.to_thread(
            judge_counting, data, ids, params, self.work_dir, name
        )
        if faces is not None:
            self.known.put(event.scene_id, event.revision, faces)
        return [self._verdict(event, event.revision, as_json(result), envelope(result))]

    def _verdict(
        self, event: Executed, revision: int, result: str, verdict: GateEnvelope
    ) -> GatesEvaluated:
        return follow(
            event,
            GatesEvaluated,
            self.clock(),
            scene_id=event.scene_id,
            revision=revision,
            guardians=list(self.config.guardians),
            result=result,
            envelope=verdict,
            config=self.config.name,
        )

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Executed():
                return await self.on_executed(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """What the guardians consume: every run's execution result."""
    return [subjects.any_run(prefix, "executed")]
