"""What the doors may ask of the guardians: judge a committed revision on demand.

``blendmesh guardians SCENE`` prints what ``run_guardians`` says of a revision, with the
configured guardians or the ones named, exactly as the service would judge it.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nats.js import JetStreamContext

from contracts.errors import BlendmeshError
from services.executor.client import SceneFiles
from services.guardians.baseline import Revision, faces_before
from services.guardians.config import gates_file, load, params_for
from services.guardians.judge import judge

__all__ = ["NoArtifact", "judge_revision"]


class NoArtifact(BlendmeshError, LookupError):
    """The scene has no such revision, or the revision has no inspection artifact."""


async def judge_revision(
    js: JetStreamContext,
    prefix: str,
    scene_id: str,
    env: Mapping[str, str],
    revision: int | None = None,
    guardians: Sequence[str] = (),
) -> dict[str, Any]:
    """``run_guardians`` over the artifact of ``revision`` (the head when None)."""
    files = SceneFiles(js, prefix)
    found = await files.revision_inspection(scene_id, revision)
    if found is None:
        which = f"no revision {revision}" if revision is not None else "no committed revision"
        raise NoArtifact(
            f"scene {scene_id} has {which} with an inspection artifact; "
            "`blendmesh runs` lists the scenes runs committed"
        )
    number, artifact = found
    config = load(gates_file(env))
    ids = list(guardians) or list(config.guardians)
    # Judged as the service judged it: against the revision the run started from.
    before = await faces_before(revision_artifacts(files), scene_id, number)
    params = params_for(config, scene_id, before)
    with tempfile.TemporaryDirectory(prefix="blendmesh-guardians-") as work:
        name = f"{scene_id}-{number:08d}"
        return await asyncio.to_thread(judge, artifact, ids, params, Path(work), name)


def revision_artifacts(files: SceneFiles) -> Revision:
    """Each revision's inspection artifact, by scene and number, from the scene store."""

    async def artifact(scene_id: str, number: int) -> bytes | None:
        found = await files.revision_inspection(scene_id, number)
        return None if found is None else found[1]

    return artifact
