"""Library .blend files a shot links, kept linked (ADR 0060).

A shot (a scene whose file links characters, props and sets from other .blend files) is
stored with links of one form only: ``//libraries/<name>@<revision>.blend``, relative to
the shot. ``<name>`` is a library of the shot's project and ``<revision>`` one of its
published revisions, so every stored revision of a shot names exactly the library
revisions it uses, and a revert, a checkpoint or a download needs no other record. An
executor puts those files, read-only, in a ``libraries`` folder beside the shot before
Blender opens it; Blender resolves the links there. Any other library path (absolute, with
``..``, another project's, a library nobody supplied) is refused before Blender reads the
file, as every link was before (services/bridge/blendfiles/references.py).

An upload names its libraries without revisions, ``//libraries/<name>.blend``: the client
rewrites its links so (``blendmesh scenes import``), and the executor, once it has
published each library, rewrites them to the revisions it published.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.scene_files import BLOB_PATTERN, DEFAULT_MAX_UPLOAD_BYTES, is_blob_id

LIBRARY_DIR = "libraries"
# A shot links at most this many libraries, holding at most this many bytes together:
# each is materialised beside the shot on every load.
MAX_LIBRARIES = 16
MAX_LIBRARY_BYTES = DEFAULT_MAX_UPLOAD_BYTES
MAX_LIBRARIES_TOTAL_BYTES = 4 * DEFAULT_MAX_UPLOAD_BYTES
MAX_REVISION = 10**8 - 1  # eight digits, as a scene's revision in its object name
NAME_PATTERN = r"[a-z0-9][a-z0-9_-]{0,62}"
_NAME = re.compile(NAME_PATTERN)
_OWNER = re.compile(r"[A-Za-z0-9._@+-]{1,128}")  # a user name (services/runtime/server/users.py)
# The only library paths a stored shot holds; Blender writes them with forward slashes.
_LINK = re.compile(rf"//{LIBRARY_DIR}/({NAME_PATTERN})@([1-9][0-9]{{0,7}})\.blend")
_UPLOADED = re.compile(rf"//{LIBRARY_DIR}/({NAME_PATTERN})\.blend")
ADVICE = (
    "a shot may link only libraries of its own project: import it with "
    "`blendmesh scenes import SHOT.blend`, which brings the .blend files it links along"
)


def project_of(owner: str) -> str:
    """The project a scene of ``owner`` belongs to, whose libraries its links may name.

    Today every user has one personal project; the project a scene is filed under will
    answer here once scenes can be shared. A user name may hold ``. @ +``, which a store
    key may not (and ``.`` separates a project from a library name there): each such
    character, and ``=``, is written ``=XX``, so two users never share a project.
    """
    if not _OWNER.fullmatch(owner):
        raise ValueError(f"scene owner {owner[:80]!r} is not a user name")
    return "personal-" + "".join(
        c if c.isascii() and (c.isalnum() or c in "_-") else f"={ord(c):02X}" for c in owner
    )


def library_key(project: str, name: str) -> str:
    """The key a library's revisions are stored under: one project's names never meet
    another's."""
    return f"{project}.{name}"


def is_name(value: object) -> bool:
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def name_for(filename: str) -> str:
    """A library name for a file called ``filename``: its stem, lower case, each run of
    other characters a ``-``; "" when nothing of it is left."""
    stem = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    stem = stem[: -len(".blend")] if stem.lower().endswith(".blend") else stem
    cleaned = re.sub(r"[^a-z0-9_-]+", "-", stem.lower()).strip("-_")
    return cleaned[:63]


def link(name: str, revision: int) -> str:
    """The path a stored shot links revision ``revision`` of library ``name`` by."""
    return f"//{LIBRARY_DIR}/{name}@{revision}.blend"


def uploaded_link(name: str) -> str:
    """The path an uploaded shot links the library ``name`` it brings along by."""
    return f"//{LIBRARY_DIR}/{name}.blend"


def file_name(name: str, revision: int) -> str:
    """The file a revision is materialised as, in the ``libraries`` folder of a shot."""
    return f"{name}@{revision}.blend"


def parse_link(path: str) -> tuple[str, int] | None:
    """(name, revision) of a stored shot's library path; None for any other path."""
    found = _LINK.fullmatch(path)
    return (found.group(1), int(found.group(2))) if found else None


def parse_uploaded(path: str) -> str | None:
    """The library name of an uploaded shot's library path; None for any other path."""
    found = _UPLOADED.fullmatch(path)
    return found.group(1) if found else None


def libraries_problem(value: Any) -> str | None:
    """Why ``value`` is not the ``libraries`` argument of ``scene.import`` (a map of at
    most ``MAX_LIBRARIES`` names to staged uploads of at most ``MAX_LIBRARY_BYTES``
    each, ``MAX_LIBRARIES_TOTAL_BYTES`` together); None when it is one."""
    shape = (
        'scene.import\'s "libraries" maps library names (lower-case letters, digits, "_" '
        'or "-") to {"blob": "sha256:<64 hex digits>", "bytes": <size>}'
    )
    if not isinstance(value, dict):
        return shape
    if len(value) > MAX_LIBRARIES:
        return (
            f"scene.import brings {len(value)} libraries; a shot links at most "
            f"{MAX_LIBRARIES}: make the rest local in Blender"
        )
    total = 0
    for name, staged in value.items():
        if not is_name(name) or not isinstance(staged, dict) or set(staged) != {"blob", "bytes"}:
            return shape
        size = staged["bytes"]
        if not is_blob_id(staged["blob"]) or not isinstance(size, int) or isinstance(size, bool):
            return shape
        if not 0 < size <= MAX_LIBRARY_BYTES:
            return (
                f"library {name!r} of {size} bytes: a library holds 1 to {MAX_LIBRARY_BYTES} bytes"
            )
        total += size
    if total > MAX_LIBRARIES_TOTAL_BYTES:
        return (
            f"scene.import brings {total} bytes of libraries; a shot's libraries hold at "
            f"most {MAX_LIBRARIES_TOTAL_BYTES} bytes together"
        )
    return None


UPDATE_TOOL = "library.update"


def update_problem(args: Any) -> str | None:
    """Why ``args`` are not ``library.update``'s; None when they are. Two forms: a
    published revision (``name``, ``revision``), or a staged .blend to publish as the
    library's next revision first (``name``, ``blob``, ``bytes``)."""
    if isinstance(args, dict) and is_name(args.get("name")):
        if set(args) == {"name", "revision"} and _count(args["revision"], MAX_REVISION):
            return None
        if (
            set(args) == {"name", "blob", "bytes"}
            and is_blob_id(args["blob"])
            and _count(args["bytes"], MAX_LIBRARY_BYTES)
        ):
            return None
    return (
        'library.update takes {"name": <a library the scene links>, "revision": <a '
        'published revision, 1 or more>}, or {"name", "blob": "sha256:<64 hex digits>", '
        f'"bytes": <1 to {MAX_LIBRARY_BYTES}>}} naming a staged .blend to publish as its next '
        "revision; `blendmesh scenes download` shows the revisions a scene links and "
        "`blendmesh libraries publish` stages a file"
    )


def _count(value: Any, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def update_plan(request_id: str, name: str, revision: int) -> dict[str, Any]:
    """The plan that points a shot's links to library ``name`` at ``revision``."""
    return _update(request_id, {"name": name, "revision": revision})


def publish_plan(request_id: str, name: str, blob: str, size: int) -> dict[str, Any]:
    """The plan that publishes the staged ``blob`` as the next revision of library
    ``name`` and points a shot's links to it there: a revision is published only when a
    person asks for it, and only the shot it is asked for moves to it."""
    return _update(request_id, {"name": name, "blob": blob, "bytes": size})


def _update(request_id: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "operations": [
            {
                "operation_id": "library_update",
                "tool_name": UPDATE_TOOL,
                "args": args,
                "depends_on": [],
                "safety_level": "destructive",
            }
        ],
    }


def tool_entry() -> dict[str, Any]:
    """``library.update`` as an MCP ``tools/list`` entry. Destructive: the library's data
    in the scene changes wholesale, so the default policy asks a person."""
    return {
        "name": UPDATE_TOOL,
        "description": "Point the scene's links to a library at another published revision "
        "of it, or publish a staged .blend (blob and bytes instead of revision) as its next "
        "revision and point them there; overridden properties keep the scene's values.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": f"^{NAME_PATTERN}$"},
                "revision": {"type": "integer", "minimum": 1, "maximum": MAX_REVISION},
                "blob": {"type": "string", "pattern": BLOB_PATTERN},
                "bytes": {"type": "integer", "minimum": 1, "maximum": MAX_LIBRARY_BYTES},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "_meta": {"blendmesh": {"safety_level": "destructive", "compensation": "checkpoint"}},
    }
