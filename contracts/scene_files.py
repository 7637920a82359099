"""Scenes a user brings or takes back: the executor's own tools ``scene.import`` and
``scene.revert``, the plans the doors submit for them, and what counts as a .blend file.

Import and revert are runs like any other, so policy, approval, the log, the audit and
scene ownership apply to them unchanged: a door stages the file (import) and submits a
one-operation plan; the executor, not the bridge, answers the tool by loading the file
into Blender (scripts never run) and the run's commit makes the new revision.
"""

from __future__ import annotations

import hashlib
import io
import re
import zlib
from typing import Any

import zstandard

IMPORT_TOOL = "scene.import"
REVERT_TOOL = "scene.revert"
SCENE_TOOLS = (IMPORT_TOOL, REVERT_TOOL)
# BLENDMESH_MAX_UPLOAD_BYTES: the largest .blend a door stages for an import.
DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
BLOB_PATTERN = r"^sha256:[0-9a-f]{64}$"
_BLOB_RE = re.compile(r"sha256:[0-9a-f]{64}")
_MAGIC = b"BLENDER"
_GZIP = b"\x1f\x8b"
_ZSTD = b"\x28\xb5\x2f\xfd"


def blob_id(data: bytes) -> str:
    """The content address a staged upload is known by: ``sha256:<hex>``."""
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def is_blob_id(value: object) -> bool:
    return isinstance(value, str) and _BLOB_RE.fullmatch(value) is not None


def _inner_head(data: bytes) -> bytes:
    """The first bytes of what a compressed .blend holds (Blender writes zstd, older
    versions gzip); b"" when the data is neither or cannot be decompressed."""
    try:
        if data.startswith(_GZIP):
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[:65536], len(_MAGIC))
        if data.startswith(_ZSTD):
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
            return reader.read(len(_MAGIC))
    except (zlib.error, zstandard.ZstdError):
        return b""
    return b""


def blend_problem(data: bytes, what: str) -> str | None:
    """Why ``data`` is not a .blend file (``what`` names it in the message); None when it
    is one: it starts with ``BLENDER``, or is zstd/gzip-compressed with that inside."""
    if data.startswith(_MAGIC) or _inner_head(data).startswith(_MAGIC):
        return None
    if not data:
        return f"{what} is empty; save the scene from Blender (File > Save) and import that file"
    return (
        f"{what} is not a .blend file (it does not start with BLENDER, compressed or not); "
        "save the scene from Blender (File > Save) and import that file"
    )


def _plan(request_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "operations": [
            {
                "operation_id": tool.replace(".", "_"),
                "tool_name": tool,
                "args": args,
                "depends_on": [],
                "safety_level": "destructive",
            }
        ],
    }


def import_plan(
    request_id: str, blob: str, size: int, libraries: dict[str, tuple[str, int]] | None = None
) -> dict[str, Any]:
    """The plan of an import: replace the scene with the staged upload ``blob``, bringing
    the staged ``libraries`` it links (name -> (blob, size); contracts/libraries.py)."""
    args: dict[str, Any] = {"blob": blob, "bytes": size}
    if libraries:
        args["libraries"] = {n: {"blob": b, "bytes": s} for n, (b, s) in libraries.items()}
    return _plan(request_id, IMPORT_TOOL, args)


def revert_plan(request_id: str, revision: int) -> dict[str, Any]:
    """The plan of a revert: make a new revision whose scene equals ``revision``'s."""
    return _plan(request_id, REVERT_TOOL, {"revision": revision})


def tool_entries() -> list[dict[str, Any]]:
    """The two tools as MCP ``tools/list`` entries, for the catalog the planner, the policy
    and the capability gate read. Both are destructive: they replace the whole scene (the
    old revisions stay in the store), so the default policy asks a person."""
    meta = {"safety_level": "destructive", "compensation": "checkpoint"}
    return [
        {
            "name": IMPORT_TOOL,
            "description": "Replace the scene with an uploaded .blend file (staged by "
            "`blendmesh scenes import` or POST /api/scenes/{id}/import), with the library "
            ".blend files it links.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "blob": {"type": "string", "pattern": BLOB_PATTERN},
                    "bytes": {"type": "integer", "minimum": 1},
                    # The library .blend files a shot links, staged beside it (ADR 0060).
                    "libraries": {
                        "type": "object",
                        "maxProperties": 16,
                        "propertyNames": {"pattern": "^[a-z0-9][a-z0-9_-]{0,62}$"},
                        "additionalProperties": {
                            "type": "object",
                            "properties": {
                                "blob": {"type": "string", "pattern": BLOB_PATTERN},
                                "bytes": {"type": "integer", "minimum": 1},
                            },
                            "required": ["blob", "bytes"],
                            "additionalProperties": False,
                        },
                    },
                },
                "required": ["blob", "bytes"],
                "additionalProperties": False,
            },
            "_meta": {"blendmesh": meta},
        },
        {
            "name": REVERT_TOOL,
            "description": "Make the scene equal to one of its earlier revisions; the "
            "revisions in between are kept.",
            "inputSchema": {
                "type": "object",
                "properties": {"revision": {"type": "integer", "minimum": 1}},
                "required": ["revision"],
                "additionalProperties": False,
            },
            "_meta": {"blendmesh": meta},
        },
    ]


MAX_PLAN_WORDS = 200  # characters of a plan run's words a list shows


def plan_words(plan: Any) -> str:
    """A plan run as written, in words a list of runs shows in place of a request: an
    import, a revert, or its tools (a run made without words has no request to show)."""
    operations = plan.get("operations") if isinstance(plan, dict) else None
    ops = [op for op in operations or [] if isinstance(op, dict)]
    tools = [str(op.get("tool_name") or op.get("tool") or "?") for op in ops]
    args = ops[0].get("args") if len(ops) == 1 else None
    args = args if isinstance(args, dict) else {}
    if tools == [IMPORT_TOOL]:
        size = args.get("bytes")
        said = f"import a .blend ({_size(size)})" if isinstance(size, int) else "import a .blend"
    elif tools == [REVERT_TOOL]:
        said = f"revert to revision {args.get('revision')}"
    elif tools:
        said = "plan: " + ", ".join(tools)
    else:
        said = "(plan as written)"
    return said if len(said) <= MAX_PLAN_WORDS else said[: MAX_PLAN_WORDS - 1] + "…"


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{max(1, round(n / 1024))} KB"
