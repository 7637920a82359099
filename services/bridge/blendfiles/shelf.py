"""The libraries beside a shot: which of its links they satisfy (ADR 0060).

The executor puts the library revisions a shot names in a ``libraries`` folder beside the
shot's file, read-only, and nothing else. A link is the shot's own only when its stored
path has the one form a stored shot's links take (``//libraries/<name>@<revision>.blend``)
and that file is there as a regular file: any other path (absolute, with ``..``, a name the
executor did not supply) stays an outside reference and is refused, as before. A library
must itself be self-contained, and a shot's libraries are bounded in number and size, all
before Blender reads a byte of them.
"""

from __future__ import annotations

import os
import stat

from contracts.libraries import (
    LIBRARY_DIR,
    MAX_LIBRARIES,
    MAX_LIBRARIES_TOTAL_BYTES,
    MAX_LIBRARY_BYTES,
    file_name,
    parse_link,
)
from services.bridge.blendfiles import blendfile, references


class Shelf:
    """The ``libraries`` folder beside the shot in ``folder``; ``accepts`` is handed to
    ``references.references`` and remembers each library it took."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.join(folder, LIBRARY_DIR)
        self.used: dict[str, tuple[str, int]] = {}  # stored path -> (file, bytes)

    def accepts(self, stored: str) -> bool:
        parsed = parse_link(stored)
        if parsed is None:
            return False
        file = os.path.join(self.folder, file_name(*parsed))
        try:
            found = os.lstat(file)
        except OSError:
            return False  # not supplied: refused as an outside reference
        if not stat.S_ISREG(found.st_mode):
            return False
        self.used[stored] = (file, found.st_size)
        return True

    def problems(self) -> list[str]:
        """What is wrong with the libraries taken: too many, too large, unreadable, or
        one that itself refers to data outside it (each named by its file name)."""
        if len(self.used) > MAX_LIBRARIES:
            many = len(self.used)
            return [f"it links {many} libraries, more than the {MAX_LIBRARIES} a shot may"]
        total = sum(size for _, size in self.used.values())
        if total > MAX_LIBRARIES_TOTAL_BYTES:
            return [
                f"its libraries hold {total} bytes, more than the {MAX_LIBRARIES_TOTAL_BYTES} "
                "a shot's libraries may together"
            ]
        found = []
        for stored, (file, size) in sorted(self.used.items()):
            shown = references.last_part(stored)
            if size > MAX_LIBRARY_BYTES:
                found.append(f"library {shown} holds {size} bytes, more than {MAX_LIBRARY_BYTES}")
                continue
            try:
                inside = references.references(file)  # a library links nothing itself
            except blendfile.Unreadable as err:
                found.append(f"library {shown}: {err}")
                continue
            if inside:
                found.append(
                    f"library {shown} itself refers to data outside it: "
                    f"{references.describe(inside)}"
                )
        return found
