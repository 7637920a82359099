"""What the executor needs from the outside world, as small Protocols.

Every port the executor depends on lives here, with the errors and values it speaks in;
its in-memory fake is in ``memory.py`` beside it, and ``tests/contract/`` holds each fake
and its real adapter to the same behaviour.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import msgspec

from contracts.bridge import GltfExport, HashScheme, Preview, SavedScene, ToolResult
from contracts.errors import BlendmeshError
from contracts.exports import ExportParams, SceneExported
from contracts.inspection import SceneInspection
from contracts.nodes import NodeCatalog
from contracts.scenes import Head, SceneSummary
from contracts.tools import ToolCatalog
from contracts.views import AssetImported, AssetParams, ViewParams
from services.executor.domain.journal import JournalEntry


class BridgeError(BlendmeshError):
    """Protocol/transport failure, or a JSON-RPC error from the bridge (``code`` set)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class BridgeCrashed(BridgeError):
    """The child died or closed its stdout; start a new BridgeProcess."""


class Bridge(Protocol):
    """Port: a Blender bridge process (MCP over stdio) that can be restarted."""

    @property
    def generation(self) -> int:
        """Which Blender process serves the bridge, counted from 1: a new one holds none of
        the old one's scene, so a run that sees it change has lost its unsaved work."""
        ...

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        """Run one tool: a tool that fails answers with a ToolResult, a dead bridge raises."""
        ...

    async def reset(self) -> str: ...

    async def load(self, path: str) -> str: ...

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        """Write a copy of the scene. ``checked``: its hash is the full one; unchecked, the
        cache's, which ``verify`` then checks (a commit overlaps that with storing it)."""
        ...

    async def verify(self) -> str:
        """The full hash, checked against the cache (which a mismatch rebuilds)."""
        ...

    async def summary(self, scene_id: str) -> SceneSummary:
        """What planners are told of the scene, stored as ``scene_id``."""
        ...

    async def fingerprint(self) -> str: ...

    async def fingerprint_full(self, scheme: HashScheme = "digests") -> str:
        """The hash recomputed in full; ``whole_snapshot`` verifies revisions committed
        before the hash combined per-datablock digests (ADR 0012)."""
        ...

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        """Write a small PNG of the scene to ``path`` without changing the scene."""
        ...

    async def inspect(self) -> SceneInspection:
        """Describe the scene it holds, deterministically, for the inspection artifact."""
        ...

    async def render_view(self, view: ViewParams) -> Preview:
        """Write a PNG of one view of the scene to ``view.path`` without changing it."""
        ...

    async def import_asset(self, asset: AssetParams) -> AssetImported:
        """Import the asset file at ``asset.path`` into a collection of the scene."""
        ...

    async def export_scene(self, want: ExportParams) -> SceneExported:
        """Write the scene to ``want.path`` as ``want.format``, without changing it."""
        ...

    async def restart(self) -> None:
        """Replace a dead or hung bridge with a fresh one (empty scene)."""
        ...


class Journal(Protocol):
    """Port: committed operations by key."""

    async def get(self, key: str) -> JournalEntry | None: ...

    async def put(self, key: str, entry: JournalEntry) -> None: ...

    async def put_many(self, entries: Sequence[tuple[str, JournalEntry]]) -> None:
        """Store ``entries`` in order, stopping at the first that fails: the journal never
        holds one without those before it. A store may write them as one atomic batch."""
        ...

    async def delete(self, key: str) -> None: ...


class Lease(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    scene_id: str
    owner: str
    epoch: int
    expires_at: float
    kv_revision: int = 0
    # Held warm between runs (ADR 0037): the holder's Blender still has the scene loaded
    # but runs nothing on it. Others defer a run to it, and may take it over when it
    # does not come for the run; a running lease (False) is never taken before it expires.
    idle: bool = False


class LeaseHeld(BlendmeshError):
    """Another executor holds this scene now; try again after ``retry_in`` seconds.
    ``idle``: it holds the scene warm between runs, at lease ``epoch``."""

    def __init__(
        self, scene_id: str, owner: str, retry_in: float, idle: bool = False, epoch: int = 0
    ) -> None:
        doing = "held warm" if idle else "being written"
        super().__init__(f"scene {scene_id} is {doing} by {owner}")
        self.scene_id = scene_id
        self.owner = owner
        self.retry_in = retry_in
        self.idle = idle
        self.epoch = epoch


class LeaseLost(BlendmeshError):
    """This executor no longer owns the scene: its changes must not be committed."""


class Leases(Protocol):
    """Port: one writer per scene. ``acquire`` raises ``LeaseHeld`` while another owner's
    lease is unexpired, unless ``take_idle`` and that lease is an idle warm hold, which it
    then takes over (the epoch goes up; the former holder's next renewal raises
    ``LeaseLost``). ``renew`` writes the lease as given, ``idle`` included. ``retake``
    turns this owner's own warm hold back into a running lease in one compare-and-set,
    without reading the bucket first (the epoch goes up, as with ``acquire``); it raises
    ``LeaseLost`` when the bucket no longer holds that hold as given, and the caller then
    acquires as usual."""

    async def acquire(self, scene_id: str, take_idle: bool = False) -> Lease: ...

    async def retake(self, lease: Lease) -> Lease: ...

    async def renew(self, lease: Lease) -> Lease: ...

    async def release(self, lease: Lease) -> None: ...


class StaleCommit(BlendmeshError):
    """Someone else committed the scene since this writer read its head."""


INSPECTION_SUFFIX = ".inspection.json"


def inspection_name(head: Head) -> str:
    """Where a revision's inspection artifact is stored: beside its .blend, named after it
    (``<scene>/<revision:08d>-<hash16>.inspection.json`` in the object store)."""
    return head.object_name + INSPECTION_SUFFIX


class SceneStore(Protocol):
    """Port: read the head, fetch a revision, commit a new one (compare-and-set), and keep
    each revision's inspection artifact beside it."""

    async def head(self, scene_id: str) -> Head | None: ...

    async def fetch(self, head: Head, dest: Path) -> None: ...

    async def commit(
        self,
        scene_id: str,
        blend: Path,
        scene_hash: str,
        parent: Head | None,
        epoch: int,
        owner: str = "",
        check: Callable[[], Awaitable[None]] | None = None,
    ) -> Head:
        """Store ``blend`` as the revision after ``parent``; ``check``, when given, is awaited
        before the head moves, and what it raises leaves the head where it was."""
        ...

    async def put_inspection(self, head: Head, document: bytes) -> str:
        """Store the inspection artifact of revision ``head``; returns its object name."""
        ...

    async def inspection(self, head: Head) -> str | None:
        """The object name of ``head``'s artifact, or None when none was stored."""
        ...

    async def read_inspection(self, name: str) -> bytes | None:
        """An artifact by object name; None when there is none (or the name is no artifact's)."""
        ...

    async def put_result(self, name: str, blend: Path) -> None:
        """Keep the result image of an operation that cannot be replayed by calling it."""
        ...

    async def fetch_result(self, name: str, dest: Path) -> bool:
        """Write result image ``name`` to ``dest``; False when there is none."""
        ...


# Pictures of a scene's revisions kept for before/after views: the newest this many.
KEPT_REVISION_PREVIEWS = 20


class Previews(Protocol):
    """Port: the latest preview PNG of a scene, or None when none was rendered; and the
    pictures of its recent revisions, so a run's before and after can be shown side by
    side (the oldest beyond a bound are deleted as new ones arrive)."""

    async def put(self, scene_id: str, png: bytes) -> None: ...

    async def get(self, scene_id: str) -> bytes | None: ...

    async def put_revision(self, scene_id: str, revision: int, png: bytes) -> None: ...

    async def get_revision(self, scene_id: str, revision: int) -> bytes | None: ...

    async def put_model(self, scene_id: str, revision: int, glb: bytes) -> None:
        """The revision as binary glTF, for a 3D view (kept like its picture)."""
        ...

    async def get_model(self, scene_id: str, revision: int) -> bytes | None: ...


class PreviewBridge(Protocol):
    """Port: what the preview worker asks of its own Blender (a ``Bridge`` is one)."""

    async def load(self, path: str) -> str: ...

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Any: ...

    async def export_gltf(self, path: str, max_bytes: int) -> GltfExport: ...

    async def restart(self) -> None: ...


class SceneSummaries(Protocol):
    """Port: the latest summary of a scene, or None for a scene never saved."""

    async def get(self, scene_id: str) -> SceneSummary | None: ...

    async def put(self, summary: SceneSummary) -> None: ...


class CatalogSource(Protocol):
    """Port: the current tool catalog, or None while no executor has published one."""

    async def get(self) -> ToolCatalog | None: ...


class NodeCatalogSource(Protocol):
    """Port: the node catalog of the executor's Blender, or None while none is published."""

    async def get(self) -> NodeCatalog | None: ...


@dataclass(frozen=True)
class StagedExport:
    """A copy of a revision's file written beside the exported one, with the digest of its
    bytes as ``<scheme>:<hex>``."""

    scene_id: str
    path: Path
    digest: str


# Port: take a file the executor no longer needs away now, and delete it where deleting
# it holds up nobody (adapters/trash.py); a missing file is no error.
Discard = Callable[[Path], None]


def unlink_now(path: Path) -> None:
    """The plain ``Discard``: delete at once, as a small file or a test may."""
    path.unlink(missing_ok=True)


class Exports(Protocol):
    """Port: the .blend and preview PNG a user opens, written where they look for them."""

    def export(self, source: Path, scene_id: str) -> Path: ...

    def stage(self, source: Path, scene_id: str) -> StagedExport:
        """Copy ``source`` beside the exported file, not yet in its place (blocking)."""
        ...

    def publish(self, staged: StagedExport) -> Path:
        """Put a staged copy in place of the exported file."""
        ...

    def discard(self, staged: StagedExport) -> None: ...

    def export_preview(self, png: bytes, scene_id: str) -> Path: ...
