"""Asset files a user brings into a scene: glTF/GLB, FBX, OBJ, USD (text) and STL.

``scene.import_asset`` is the executor's own tool, like ``scene.import``: a door stages the
file (``services/executor/adapters/uploads.py``) and submits a one-operation plan; the executor
checks the file here, writes a private copy and has its Blender import it into a named
collection. It adds to the scene rather than replacing it, so it is a ``safe_write`` with
a checkpoint to restore.

The rule of ADR 0019 for .blend files holds for assets too (ADR 0025): a file may only
bring what it holds. What a format can point at outside itself is refused before Blender
reads the file (``asset_problem``): a glTF buffer or image at any URI but an embedded
``data:`` one, an OBJ material library, a USD asset path. What only an import shows (an
FBX texture stored as a path) is refused after it, with the scene restored.
"""

from __future__ import annotations

import json
import re
import struct
from typing import Any, Literal

from contracts.gltf_sizes import gltf_size_problem
from contracts.scene_files import BLOB_PATTERN

ASSET_TOOL = "scene.import_asset"
AssetFormat = Literal["gltf", "glb", "fbx", "obj", "usda", "stl"]
# File name ending -> format; a door takes the format from the name a person gave.
EXTENSIONS: dict[str, AssetFormat] = {
    ".gltf": "gltf",
    ".glb": "glb",
    ".fbx": "fbx",
    ".obj": "obj",
    ".usda": "usda",
    ".usd": "usda",  # a .usd may be text or binary: only text is taken (see ``_usd``)
    ".stl": "stl",
}
FORMATS: tuple[AssetFormat, ...] = ("gltf", "glb", "fbx", "obj", "usda", "stl")
# A collection name: Blender's 63 characters, and nothing that reads as a path.
COLLECTION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,62}$"
_COLLECTION_RE = re.compile(COLLECTION_PATTERN)
_GLB_MAGIC = b"glTF"
_GLB_JSON = 0x4E4F534A
_GLB_BIN = 0x004E4942
_FBX_BINARY = b"Kaydara FBX Binary"
_SHOWN = 5  # external references a refusal names; it counts the rest
_ADVICE = (
    "blendmesh imports only self-contained files: export with embedded data (glTF: "
    "'glTF Binary (.glb)' or 'glTF Embedded'; FBX: Path Mode 'Copy' with 'Embed Textures')"
)


def format_of(filename: str) -> AssetFormat | None:
    """The format a file's name ending says, or None for a name blendmesh does not import."""
    lowered = filename.lower()
    return next((f for ext, f in EXTENSIONS.items() if lowered.endswith(ext)), None)


def extension_problem(filename: str) -> str | None:
    """Why ``filename`` cannot be imported by its ending; None when it can."""
    if format_of(filename) is not None:
        return None
    endings = ", ".join(EXTENSIONS)
    return (
        f"{filename[-64:]!r} does not end in a format blendmesh imports ({endings}); "
        "export the asset in one of them (a .blend is imported with `scenes import`)"
    )


def collection_problem(name: object) -> str | None:
    """Why ``name`` cannot name the collection an import goes into; None when it can."""
    if isinstance(name, str) and _COLLECTION_RE.fullmatch(name) and ".." not in name:
        return None
    return (
        "the collection must be a name of 1 to 63 letters, digits, spaces, '_', '.' or '-', "
        "starting with a letter or digit (no path), e.g. 'Props'"
    )


def _last_part(uri: str) -> str:
    """A reference by the last part of its path, as ADR 0019 shows them: where it points
    is nobody's business but the file's author's."""
    return uri.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1][-48:] or uri[-48:]


def _external(uris: list[str]) -> str:
    shown = ", ".join(repr(_last_part(u)) for u in uris[:_SHOWN])
    more = f" and {len(uris) - _SHOWN} more" if len(uris) > _SHOWN else ""
    return f"it refers to files outside it, which blendmesh does not read: {shown}{more}"


def _gltf_document(doc: Any, what: str, file_bytes: int, binary: int | None) -> str | None:
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        return f"{what} is not a glTF document (no 'asset' object); export it again"
    outside = []
    for key in ("buffers", "images"):
        items = doc.get(key, [])
        if not isinstance(items, list):
            return f"{what} is malformed: '{key}' is not a list"
        for item in items:
            uri = item.get("uri") if isinstance(item, dict) else None
            if uri is not None and not (isinstance(uri, str) and uri.startswith("data:")):
                outside.append(str(uri))
    if outside:
        return f"{what}: {_external(outside)}; {_ADVICE}"
    sizes = gltf_size_problem(doc, file_bytes, binary)
    return f"{what} is refused before it is read: {sizes}" if sizes else None


def _gltf(data: bytes, what: str, file_bytes: int = 0, binary: int | None = None) -> str | None:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return f"{what} is not a .gltf file (not JSON text); export it again, or as .glb"
    return _gltf_document(doc, what, file_bytes or len(data), binary)


def _glb(data: bytes, what: str) -> str | None:
    if len(data) < 20 or not data.startswith(_GLB_MAGIC):
        return f"{what} is not a .glb file (it does not start with 'glTF'); export it again"
    _, version, length = struct.unpack_from("<4sII", data)
    chunk_length, chunk_type = struct.unpack_from("<II", data, 12)
    if version != 2 or length != len(data) or chunk_type != _GLB_JSON:
        return f"{what} is a malformed .glb (version, length or first chunk); export it again"
    if 20 + chunk_length > len(data):
        return f"{what} is a malformed .glb (its JSON chunk runs past the end); export it again"
    return _gltf(data[20 : 20 + chunk_length], what, len(data), _glb_binary(data, chunk_length))


def _glb_binary(data: bytes, json_length: int) -> int | None:
    """The length of the GLB's binary chunk (buffer 0 without a URI), None without one."""
    at = 20 + json_length
    if at + 8 > len(data):
        return None
    length, kind = struct.unpack_from("<II", data, at)
    return min(length, len(data) - at - 8) if kind == _GLB_BIN else None


def _obj(data: bytes, what: str) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"{what} is not an .obj file (not text); export it again"
    libraries = [
        line.split(None, 1)[1].strip() if len(line.split(None, 1)) > 1 else ""
        for line in text.splitlines()
        if line.lstrip().startswith("mtllib")
    ]
    if libraries:
        return (
            f"{what}: {_external(libraries)}; blendmesh imports one .obj without its "
            "material library: export it without materials, or as .glb"
        )
    if not re.search(r"^\s*v\s", text, re.MULTILINE):
        return f"{what} holds no vertices ('v' lines): it is not an .obj mesh"
    return None


def _usd(data: bytes, what: str) -> str | None:
    if not data.startswith(b"#usda"):
        return (
            f"{what} is not a text USD file (it does not start with '#usda'): blendmesh "
            "imports USD as text so it can check what the file refers to; export as .usda"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"{what} is a malformed .usda (not UTF-8 text); export it again"
    paths = re.findall(r"@([^@\n]*)@", text)
    if paths:
        return f"{what}: {_external(paths)}; flatten the stage into one file and export it again"
    return None


def _stl(data: bytes, what: str) -> str | None:
    if len(data) >= 84:
        (count,) = struct.unpack_from("<I", data, 80)
        if 84 + 50 * count == len(data):
            return None
    head = data[:512].lstrip().lower()
    if head.startswith(b"solid") and b"facet" in data[:4096].lower():
        return None
    return f"{what} is not an STL mesh (neither binary nor ASCII STL); export it again"


def _fbx(data: bytes, what: str) -> str | None:
    if data.startswith(_FBX_BINARY) or data[:256].lstrip()[:1] == b";":
        return None
    return f"{what} is not an FBX file (neither binary nor ASCII FBX); export it again"


_CHECKS = {"gltf": _gltf, "glb": _glb, "fbx": _fbx, "obj": _obj, "usda": _usd, "stl": _stl}


def asset_problem(data: bytes, fmt: str, what: str) -> str | None:
    """Why ``data`` cannot be imported as ``fmt`` (``what`` names it); None when it can."""
    if not data:
        return f"{what} is empty; export the asset again"
    check = _CHECKS.get(fmt)
    if check is None:
        return f"{fmt[:16]!r} is not a format blendmesh imports ({', '.join(FORMATS)})"
    return check(data, what)


def import_asset_plan(
    request_id: str, blob: str, size: int, fmt: AssetFormat, collection: str
) -> dict[str, Any]:
    """The plan of an asset import: add the staged upload ``blob`` to ``collection``."""
    args = {"blob": blob, "bytes": size, "format": fmt, "collection": collection}
    return {
        "request_id": request_id,
        "operations": [
            {
                "operation_id": "import_asset",
                "tool_name": ASSET_TOOL,
                "args": args,
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }


def tool_entry() -> dict[str, Any]:
    """``scene.import_asset`` as an MCP ``tools/list`` entry for the catalog."""
    return {
        "name": ASSET_TOOL,
        "description": "Add the objects of an uploaded asset file (glTF/GLB, FBX, OBJ, "
        "USD as .usda, STL; staged by `blendmesh import-asset`, POST "
        "/api/scenes/{id}/assets or the MCP `import_asset` tool) to a collection of the "
        "scene, made when missing. Files that refer to other files are refused.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "blob": {"type": "string", "pattern": BLOB_PATTERN},
                "bytes": {"type": "integer", "minimum": 1},
                "format": {"type": "string", "enum": list(FORMATS)},
                "collection": {"type": "string", "pattern": COLLECTION_PATTERN},
            },
            "required": ["blob", "bytes", "format", "collection"],
            "additionalProperties": False,
        },
        "_meta": {"blendmesh": {"safety_level": "safe_write", "compensation": "checkpoint"}},
    }
