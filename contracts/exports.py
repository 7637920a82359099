"""A scene exported as a download: GLB, FBX, OBJ, USD or STL.

``scene.export`` is the executor's own tool, ``read_only`` like ``scene.render_view``: a
door submits a one-operation plan, so policy decides it, the log and the audit record it,
and the run leaves no revision. The bridge writes the file into the executor's private
work folder (a path the executor chooses, never one a caller names); the executor stages
the bytes for the run's user like an upload and the receipt names them (``file``), for the
door to hand back as a download. Nothing of the host's paths reaches the file or the caller.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

EXPORT_TOOL = "scene.export"
ExportFormat = Literal["glb", "fbx", "obj", "usd", "stl"]
# format -> (file ending, media type a download is served as)
FORMATS: dict[str, tuple[str, str]] = {
    "glb": (".glb", "model/gltf-binary"),
    "fbx": (".fbx", "application/octet-stream"),
    "obj": (".obj", "model/obj"),
    "usd": (".usdc", "model/vnd.usd"),
    "stl": (".stl", "model/stl"),
}
EXPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"format": {"type": "string", "enum": sorted(FORMATS)}},
    "required": ["format"],
    "additionalProperties": False,
}


class ExportParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.export``: the scene as ``format`` at ``path``; a file that would be
    or is over ``max_bytes`` is refused (and deleted) rather than handed on."""

    path: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    format: ExportFormat
    max_bytes: Annotated[int, msgspec.Meta(ge=1)]


class SceneExported(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A written export: its format, size and how many objects it holds."""

    format: ExportFormat
    bytes: int
    objects: int


def export_problem(fmt: Any) -> str | None:
    """Why ``fmt`` names no export format; None when it names one."""
    if isinstance(fmt, str) and fmt in FORMATS:
        return None
    return f"format {fmt!r} is not one blendmesh exports; use one of {', '.join(sorted(FORMATS))}"


def file_name(scene_id: str, fmt: str) -> str:
    """The name a download of ``scene_id`` as ``fmt`` is offered under."""
    return f"{scene_id}{FORMATS[fmt][0]}"


def export_plan(request_id: str, fmt: str) -> dict[str, Any]:
    """The plan that exports the scene as ``fmt``."""
    return {
        "request_id": request_id,
        "operations": [
            {
                "operation_id": "scene_export",
                "tool_name": EXPORT_TOOL,
                "args": {"format": fmt},
                "depends_on": [],
                "safety_level": "read_only",
            }
        ],
    }


def tool_entry() -> dict[str, Any]:
    """``scene.export`` as an MCP ``tools/list`` entry for the catalog."""
    return {
        "name": EXPORT_TOOL,
        "description": "Export the scene as a download: glb (binary glTF), fbx, obj, usd "
        "(binary USD) or stl, meshes with their modifiers applied; changes nothing. The "
        "receipt names the staged file (`file`: sha256:<hex>) and its size.",
        "inputSchema": EXPORT_SCHEMA,
        "outputSchema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["file", "bytes", "format", "objects"],
            "properties": {
                "file": {"type": "string"},
                "bytes": {"type": "integer"},
                "format": {"type": "string", "enum": sorted(FORMATS)},
                "objects": {"type": "integer"},
            },
        },
        "_meta": {"blendmesh": {"safety_level": "read_only", "compensation": "none"}},
    }
