"""The Blender bridge protocol: what the executor and its bridge child process exchange.

The bridge (``services/bridge``, the only code that imports bpy) speaks JSON-RPC
2.0 shaped like MCP, one JSON object per line on stdio. Both ends import these Structs:
the bridge builds and encodes them, the executor decodes each reply once at its edge, so
a change to the protocol is one change that mypy follows on both sides. Field names are
the wire names, in MCP's camelCase where MCP defines the message.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from contracts.tools import DeterminismClass

PROTOCOL_VERSION = "2025-06-18"  # the MCP revision both ends speak
# The JSON-RPC error of params the bridge refuses, nothing done; blendmesh/scene.load
# answers it too for a file it refuses before touching the scene (one linking a library).
INVALID_PARAMS = -32602

RequestId = int | str | None
# The spec 001 ToolResult error codes; the executor maps them to failure contracts.
ToolErrorCode = Literal[
    "invalid_input",
    "capability_missing",
    "policy_refused",
    "not_found",
    "conflict",
    "timeout",
    "nondeterministic_refused",
    "internal_error",
]
PreviewEngine = Literal["BLENDER_WORKBENCH", "CYCLES"]
PreviewSize = Annotated[int, msgspec.Meta(ge=16, le=4096)]
FilePath = Annotated[str, msgspec.Meta(min_length=1)]


# JSON-RPC 2.0 envelope


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A call the executor sends; the bridge answers it with a Response or an ErrorResponse."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: int
    method: str
    params: Any = {}  # one of the params Structs below, encoded as a JSON object


class Notification(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A message without an id: the bridge never answers it and never executes it."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any] = {}


class ErrorObject(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Why a request failed as a whole (bad JSON, unknown method, bad params, scene error);
    a tool that fails answers with a ToolResult instead."""

    code: int
    message: str


class Response(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the bridge writes for a request that ran; ``result`` is the method's Struct."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: Any


class ErrorResponse(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the bridge writes for a request it could not run."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    error: ErrorObject


class Reply(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Either response as the executor reads it: ``result`` stays raw until the caller, who
    knows the method, decodes it into that method's result Struct."""

    jsonrpc: Literal["2.0"]
    id: RequestId
    result: msgspec.Raw = msgspec.Raw()
    error: ErrorObject | None = None


class Empty(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The params and result of methods that carry nothing (``ping``, ``shutdown``)."""


# MCP lifecycle


class Implementation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Who is on the other end of the handshake, for logs."""

    name: str
    version: str


class BlenderProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the bridge's Blender can do: the executor gates tools and policies on it, so a
    plan needing a newer Blender or a UI is refused before anything runs."""

    version: str
    version_tuple: tuple[int, int, int]
    background: bool  # headless: tools whose safety_mode is ui_assisted cannot run
    engines: list[str]  # render engines this build accepts
    python: str
    # "bubblewrap": Python steps can run in their OS sandbox; "none": they are refused.
    sandbox: str


class InitializeParams(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"
):
    """The executor's half of the MCP handshake."""

    protocol_version: str = PROTOCOL_VERSION
    capabilities: dict[str, Any] = {}
    client_info: Implementation


class InitializeResult(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"
):
    """The bridge's half of the handshake; blendmesh adds the Blender profile to MCP's."""

    protocol_version: str
    server_info: Implementation
    capabilities: dict[str, Any]
    blender_profile: BlenderProfile


# Tools


class ToolList(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """MCP ``tools/list``: descriptors with blendmesh metadata under ``_meta.blendmesh``,
    read into the tool catalog by ``contracts.tools.catalog_from_mcp``."""

    tools: list[dict[str, Any]]


class CallMeta(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Correlation for one tool call, so the bridge's log lines match the receipt."""

    mcp_call_id: str | None = None


class ToolCall(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """MCP ``tools/call`` params: run one tool. There is no timeout on the wire: a busy
    Blender cannot interrupt itself, so the executor enforces it by killing the bridge."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    arguments: dict[str, Any] = {}  # checked by the bridge against the tool's input schema
    meta: CallMeta = msgspec.field(default_factory=CallMeta, name="_meta")


class Compensation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The tool call that undoes a successful one; a run rolled back as a whole replays
    these in reverse instead of loading its checkpoint."""

    tool: str
    arguments: dict[str, Any]


class ToolResult(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one tool call did (spec 001 ToolResult). A failing tool answers with this, not
    with a JSON-RPC error, because ``mutated`` tells the executor whether the scene may
    already have changed and must be restored.

    ``scene_hash``: after every call of a tool that writes, succeeded or failed, the scene
    hash right after it, equal to what ``blendmesh/scene.fingerprint`` would answer then,
    so the executor needs no second round trip. None for read-only and unknown tools
    (they cannot change the scene) and from a bridge that predates the field.

    ``determinism_class`` and ``seed`` are 001 §Determinism Requirements' metadata under
    the spec's names: how repeatable the call is, so a replay can be trusted to rebuild
    the same scene (results.py), and the seed a seeded tool ran with. The bridge's
    registry fills them for every tool it knows, success or failure; a seeded success
    always names its seed. None: a result the executor made itself (a timeout, its own
    scene tools), whose receipt takes the class the catalog declares.
    """

    ok: bool
    error_code: ToolErrorCode | None = None
    message: str = ""
    data: dict[str, Any] | None = None
    mutated: bool
    determinism_class: DeterminismClass | None = None
    seed: int | None = None
    compensation: Compensation | None = None
    scene_hash: str | None = None

    def __post_init__(self) -> None:
        if self.ok and self.determinism_class == "seeded" and self.seed is None:
            raise ValueError("a seeded tool's successful ToolResult must carry its seed")


class TextContent(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """MCP text content: the ToolResult as JSON, for clients that ignore structured content."""

    type: Literal["text"] = "text"
    text: str


class CallToolResult(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"
):
    """MCP ``tools/call`` result; the executor reads ``structured_content`` only."""

    content: list[TextContent]
    structured_content: ToolResult
    is_error: bool


# blendmesh/scene.* methods: checkpoints, persistence and previews, not planner tools.
# ``blendmesh/scene.inspect`` takes no params and answers contracts.inspection.SceneInspection.
# ``blendmesh/node_catalog`` takes no params and answers contracts.nodes.NodeCatalog.


class LoadParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.load``: open a .blend file (its embedded scripts never run)."""

    path: FilePath


class SaveParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.save``: write a copy of the scene, a checkpoint or a revision."""

    path: FilePath
    compress: bool = False
    # Off, the hash returned is the digest cache's, and ``scene.verify`` checks it in full
    # afterwards: a commit overlaps that check with storing the file (ADR 0038).
    checked: bool = True


class SummaryParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.summary``: what planners are told of the scene
    (``contracts.scenes.SceneSummary``), under the scene id the executor stores it as."""

    scene_id: Annotated[str, msgspec.Meta(min_length=1, max_length=256)]


class PreviewParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.render_preview``: a small PNG; without an engine the bridge tries
    Workbench, then Cycles on the CPU."""

    path: FilePath
    width: PreviewSize = 320
    height: PreviewSize = 240
    engine: PreviewEngine | None = None


class GltfParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.export_gltf``: the scene's meshes as one binary glTF (GLB) for a
    3D view; a file over ``max_bytes`` is deleted and refused rather than handed on."""

    path: FilePath
    max_bytes: Annotated[int, msgspec.Meta(ge=1)]


class GltfExport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A written GLB: its size and the objects it holds."""

    path: str
    bytes: int
    objects: int


# How a scene hash is computed. "digests": sha256 over the sorted per-datablock digests,
# what every method answers (ADR 0012). "whole_snapshot": sha256 of the whole canonical
# snapshot, what revisions committed before ADR 0012 carry; asked only to verify those.
HashScheme = Literal["digests", "whole_snapshot"]


class FullFingerprintParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.fingerprint_full``: hash the whole scene afresh, never from the
    bridge's digest cache (and without changing it), so the two can be compared."""

    scheme: HashScheme = "digests"


class FullSnapshot(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.snapshot_full`` (no params): what the ``scene.snapshot`` tool
    answers, described afresh from every datablock instead of assembled from the digest
    cache (which it leaves as it is), so the two can be compared."""

    data: dict[str, Any]


class SceneHash(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``scene.reset`` and ``scene.load`` leave behind, so the caller can verify it."""

    hash: str


class Fingerprint(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.fingerprint`` (from the digest cache: the cheap drift check rollbacks
    are verified by) and ``blendmesh/scene.fingerprint_full`` (recomputed in full)."""

    hash: str
    objects: int


class SavedScene(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A written .blend, with the hash of the scene it holds so a commit can be checked."""

    path: str
    bytes: int
    hash: str


class Preview(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A rendered PNG and the engine that managed it."""

    path: str
    width: int
    height: int
    engine: str
    ms: float = 0.0
