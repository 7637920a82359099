"""How a scene revision is stored: a manifest of content-addressed chunks (ADR 0021).

A revision's object in the scene store holds either the whole .blend (revisions committed
before ADR 0021) or this manifest. The manifest names the chunks in file order by their
BLAKE3 digest; the chunks live in the ``chunks`` object store under the name
``<space>/<digest>``, where the space is the scene owner's user name, so two users never
share a chunk object even when their files are identical.
"""

from __future__ import annotations

import re

import msgspec

from contracts.errors import BlendmeshError

FORMAT = "chunks-1"
# What a manifest's encoding starts with; a .blend starts with BLENDER or a compression
# magic, never with "{", so one object name serves both formats.
MANIFEST_MAGIC = b'{"format":"' + FORMAT.encode() + b'"'
DIGEST_PREFIX = "blake3:"
_HEX = re.compile(r"[0-9a-f]{64}")
# A chunk's size bounds (pyfastcdc with a 64 KiB average: min 16 KiB, max 256 KiB); a
# manifest holds at most this many chunks, which a 4 GiB scene stays under.
MAX_CHUNK_BYTES = 256 * 1024
MAX_CHUNKS = 300_000


class ManifestError(BlendmeshError, ValueError):
    """A manifest that cannot describe a revision; the message says what is wrong."""


class ChunkedRevision(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True,
                      tag=FORMAT, tag_field="format"):  # fmt: skip
    """A revision's .blend as its chunks: ``chunks`` is ``[digest hex, size]`` in file
    order, ``digest`` the BLAKE3 of the whole file (``blake3:<hex>``)."""

    space: str  # the chunks' owner: the scene owner's user name, "" for an unowned scene
    size: int
    digest: str
    chunks: list[tuple[str, int]]


def is_manifest(data: bytes) -> bool:
    return data.startswith(MANIFEST_MAGIC)


def encode(manifest: ChunkedRevision) -> bytes:
    return msgspec.json.encode(manifest)


def decode(data: bytes) -> ChunkedRevision:
    """The manifest in ``data``, checked: every chunk named by a 64-hex digest and sized
    within bounds, sizes adding up to the file's; raises ``ManifestError`` otherwise."""
    try:
        manifest = msgspec.json.decode(data, type=ChunkedRevision)
    except msgspec.ValidationError as exc:
        raise ManifestError(f"the revision manifest does not decode: {exc}") from None
    if len(manifest.chunks) > MAX_CHUNKS:
        raise ManifestError(f"the manifest lists {len(manifest.chunks)} chunks, over {MAX_CHUNKS}")
    if not manifest.digest.startswith(DIGEST_PREFIX) or not _HEX.fullmatch(
        manifest.digest.removeprefix(DIGEST_PREFIX)
    ):
        raise ManifestError(f"the manifest's file digest {manifest.digest[:80]!r} is no blake3")
    for digest, size in manifest.chunks:
        if not _HEX.fullmatch(digest) or not 0 < size <= MAX_CHUNK_BYTES:
            raise ManifestError(f"the manifest names a bad chunk {digest[:80]!r} of {size} bytes")
    if sum(size for _, size in manifest.chunks) != manifest.size:
        raise ManifestError("the manifest's chunk sizes do not add up to its file size")
    return manifest


def chunk_name(space: str, digest: str) -> str:
    """The object name of chunk ``digest`` in ``space``'s part of the chunk store."""
    return f"{space}/{digest}"
