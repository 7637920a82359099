"""A push by changed chunks: what the Blender add-on sends the gateway instead of a whole
.blend (docs/adr/0051-a-push-sends-the-blocks-that-changed.md, docs/http-api.md).

The add-on cuts its saved file into chunks (``blendmesh_addon/chunks.py``), each named by
its SHA-256, asks which of them the user's store lacks (``POST /api/uploads/chunks/missing``),
sends those in batches (``POST /api/uploads/chunks``), then names the file by its chunks
in order (``POST /api/scenes/{id}/import/chunks``), which the gateway assembles, checks
and imports like a file it received whole. A chunk is stored under its user's name: no
other user can ask for it, learn that it exists or name it in a file, hash known or not.

A batch body is a sequence of frames, each a chunk's length as 4 bytes big-endian and
then its bytes: the gateway names each chunk by the hash of the bytes it got, so a chunk
can never be stored under another content's name.
"""

from __future__ import annotations

import hashlib
import re

from contracts.errors import BlendmeshError

MAX_CHUNK_BYTES = 256 * 1024  # one chunk; the add-on's chunks.MAXIMUM
MAX_BATCH_BYTES = 16 * 1024 * 1024  # one POST /api/uploads/chunks body, frames included
MAX_CHUNKS = 8192  # chunks one manifest or one question names
CHUNK_PATTERN = r"^[0-9a-f]{64}$"
FRAME = 4  # bytes of a frame's length
_CHUNK_RE = re.compile(CHUNK_PATTERN[1:-1])


class BadBatch(BlendmeshError, ValueError):
    """A batch body that is not a sequence of frames of chunks within the limits."""


def chunk_name(data: bytes) -> str:
    """The name of a chunk: the hex SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


def is_chunk_name(value: object) -> bool:
    return isinstance(value, str) and _CHUNK_RE.fullmatch(value) is not None


def frames(chunks: list[bytes]) -> bytes:
    """A batch body holding ``chunks``."""
    return b"".join(len(c).to_bytes(FRAME, "big") + c for c in chunks)


def unframe(body: bytes | bytearray) -> list[bytes]:
    """The chunks of a batch body; ``BadBatch`` naming the first frame that is wrong."""
    chunks: list[bytes] = []
    at = 0
    view = memoryview(body)
    while at < len(view):
        if len(view) - at < FRAME:
            raise BadBatch(
                f"the body ends {len(view) - at} bytes into frame {len(chunks) + 1}'s length; "
                f"each frame is a chunk's length as {FRAME} bytes big-endian, then its bytes"
            )
        size = int.from_bytes(view[at : at + FRAME], "big")
        if not 0 < size <= MAX_CHUNK_BYTES:
            raise BadBatch(
                f"frame {len(chunks) + 1} says its chunk holds {size} bytes; a chunk holds "
                f"1 to {MAX_CHUNK_BYTES}"
            )
        if at + FRAME + size > len(view):
            raise BadBatch(
                f"frame {len(chunks) + 1} says {size} bytes but the body ends "
                f"{len(view) - at - FRAME} bytes into it"
            )
        chunks.append(bytes(view[at + FRAME : at + FRAME + size]))
        at += FRAME + size
        if len(chunks) > MAX_CHUNKS:
            raise BadBatch(f"the body holds more than {MAX_CHUNKS} chunks")
    if not chunks:
        raise BadBatch("the body holds no chunk; send at least one frame")
    return chunks


def manifest_problem(sizes: list[int], total: int, limit: int) -> str | None:
    """Why a manifest of chunks of ``sizes`` cannot be a file of ``total`` bytes that an
    import of at most ``limit`` bytes takes; None when it can."""
    if sum(sizes) != total:
        return (
            f"the chunks' sizes add up to {sum(sizes)} bytes, not the {total} the manifest "
            "says the file holds"
        )
    if total > limit:
        return (
            f"the file holds {total} bytes, more than the {limit} an import takes "
            "(BLENDMESH_MAX_UPLOAD_BYTES)"
        )
    return None
