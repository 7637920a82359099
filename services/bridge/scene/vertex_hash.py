"""The digest of a mesh's vertex positions, as the scene hash takes it, remembered for
big and small meshes.

The digest rounds the positions to ``DECIMALS`` as float64 and hashes them with SHA-256:
about 45 ms for a 491,000-vertex grid. A commit's full check describes every mesh again
although an edit rarely touches a big one, so a big mesh's digest is remembered under
the BLAKE3 digest of its raw float32 positions (about 3 ms to compute). The digest is a
function of those bytes, so a remembered one is what hashing them again would give; a
changed vertex changes the bytes, so it is computed afresh. A small mesh (a prop's cube) is
remembered under its raw bytes themselves: its digest costs little, but a scene of
thousands of props pays it thousands of times per check.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import blake3
import numpy as np

from services.bridge.scene.canonical import DECIMALS

REMEMBERED_FROM = 65_536  # vertices from which a mesh is remembered by its BLAKE3 digest
# Up to this many bytes of positions (341 vertices) a mesh is remembered by the bytes.
SMALL_BYTES = 4096
# Meshes; least recently used first out. At most 4096 x SMALL_BYTES = 16 MiB of keys.
MAX_REMEMBERED = 4096


class VertexHashes:
    """``digest(positions)`` with the big and the small meshes' digests remembered."""

    def __init__(
        self, remembered_from: int = REMEMBERED_FROM, max_remembered: int = MAX_REMEMBERED
    ) -> None:
        self.remembered_from = remembered_from
        self.max_remembered = max_remembered
        self._known: OrderedDict[bytes, str] = OrderedDict()
        self.computed = 0  # digests computed in full (for tests and benchmarks)

    def digest(self, positions: np.ndarray) -> str:
        """The SHA-256 hex of ``positions`` (flat float32 x, y, z) rounded to ``DECIMALS``
        as float64, with -0.0 as 0.0."""
        if positions.dtype != np.float32 or positions.ndim != 1:
            raise ValueError("positions are a flat float32 array")
        key = None
        if len(positions) >= self.remembered_from * 3:
            key = blake3.blake3(np.ascontiguousarray(positions).data.cast("B")).digest()
        elif positions.nbytes <= SMALL_BYTES:
            key = b"=" + positions.tobytes()  # never 32 bytes long, as a BLAKE3 digest is
        if key is not None:
            found = self._known.get(key)
            if found is not None:
                self._known.move_to_end(key)
                return found
        found = _digest(positions)
        self.computed += 1
        if key is not None:
            self._known[key] = found
            while len(self._known) > self.max_remembered:
                self._known.popitem(last=False)
        return found


def _digest(positions: np.ndarray) -> str:
    rounded = positions.astype(np.float64)
    np.round(rounded, DECIMALS, out=rounded)
    rounded += 0.0  # -0.0 hashes as 0.0
    return hashlib.sha256(rounded.data).hexdigest()
