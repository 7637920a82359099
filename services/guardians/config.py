"""Which guardians judge every committed revision: a versioned file, never the model's say.

The default is ``gates/blendmesh.v1.toml`` beside this module; ``BLENDMESH_GATES_FILE``
names another. Like the Cedar policies, the file is versioned and hashed, and each
``gates_evaluated`` event records which file (and which bytes of it) chose its guardians.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.guardians.routing import GUARDIAN_ROUTING_TABLE
from services.runtime.service.settings import SettingsError

DEFAULT = Path(__file__).parent / "gates" / "blendmesh.v1.toml"
MAX_GUARDIANS = 64  # a gate set longer than this is a mistake, not a policy
# ``[gates.scene_polygon_budget]``: scene id = faces, a budget for one scene (a shot that
# is dense by design) instead of ``polygon_budget``.
SCENE_BUDGETS = "scene_polygon_budget"
MAX_SCENE_BUDGETS = 10_000


@dataclass(frozen=True)
class GatesConfig:
    """The guardians to run, in order, and the parameters they read (``gates.json``)."""

    name: str  # "<file>@sha256:<hex>", recorded with every verdict
    guardians: tuple[str, ...]
    params: Mapping[str, Any] = field(default_factory=dict)


def gates_file(env: Mapping[str, str]) -> Path:
    """The gates file this environment names, or the built-in default."""
    raw = env.get("BLENDMESH_GATES_FILE")
    return Path(raw).absolute() if raw else DEFAULT


def load(path: Path) -> GatesConfig:
    """Read and check a gates file; a bad one stops the start, naming the file and the fix."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"gates file {path}: cannot read it ({exc.strerror})") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"gates file {path}: not valid TOML ({exc})") from None
    gates = doc.get("gates")
    if not isinstance(gates, dict):
        raise SettingsError(f"gates file {path}: it needs a [gates] table")
    ids = gates.get("guardians")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
        raise SettingsError(f"gates file {path}: gates.guardians must be a non-empty list of ids")
    if len(ids) > MAX_GUARDIANS:
        raise SettingsError(f"gates file {path}: at most {MAX_GUARDIANS} guardians")
    unknown = [i for i in ids if i not in GUARDIAN_ROUTING_TABLE]
    if unknown:
        known = ", ".join(sorted(GUARDIAN_ROUTING_TABLE))
        raise SettingsError(f"gates file {path}: unknown guardians {unknown}; known: {known}")
    params = {k: v for k, v in gates.items() if k != "guardians"}
    _check_scene_budgets(path, params.get(SCENE_BUDGETS))
    digest = hashlib.sha256(raw).hexdigest()
    return GatesConfig(name=f"{path.name}@sha256:{digest}", guardians=tuple(ids), params=params)


def params_for(config: GatesConfig, scene_id: str, faces_before: int | None) -> dict[str, Any]:
    """The parameters (``gates.json``) a revision of ``scene_id`` is judged by: the
    scene's own polygon budget if the file gives one, and the faces of the revision the
    run started from (None: unknown, the whole scene is judged)."""
    params = {k: v for k, v in config.params.items() if k != SCENE_BUDGETS}
    own = config.params.get(SCENE_BUDGETS, {}).get(scene_id)
    if own is not None:
        params["polygon_budget"] = own
    if faces_before is not None:
        params["faces_before"] = faces_before
    return params


def _check_scene_budgets(path: Path, table: Any) -> None:
    if table is None:
        return
    where = f"gates file {path}: gates.{SCENE_BUDGETS}"
    if not isinstance(table, dict):
        raise SettingsError(f"{where} must be a table of scene id = faces")
    if len(table) > MAX_SCENE_BUDGETS:
        raise SettingsError(f"{where} names {len(table)} scenes; at most {MAX_SCENE_BUDGETS}")
    for scene, faces in table.items():
        if isinstance(faces, bool) or not isinstance(faces, int) or faces < 0:
            raise SettingsError(f"{where}.{scene} = {faces!r}: give a whole number of faces")
