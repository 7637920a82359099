"""What a spec 004 PYTHON step is bound by when it runs, and the hash that names its code.

The planner, the policy service and the bridge all speak of a step's code by
``code_sha256``: an approval given for one text never covers another. The limits below
are what the bridge's sandbox enforces (docs/python-steps.md); they live here so a reader
of a plan, a policy or an error message finds the same numbers.
"""

from __future__ import annotations

import hashlib
import re

CODE_SHA256_PATTERN = r"^sha256:[0-9a-f]{64}$"
CODE_SHA256_RE = re.compile(CODE_SHA256_PATTERN)

MODES = ("safe", "trusted")
DEFAULT_TIMEOUT_MS = 4_000  # spec 004 §5's default
MAX_OUTPUT_BYTES = 64 * 1024  # what print() may write; more is refused, never cut silently
MEMORY_MIB = 2_048  # address space a step may add to what Blender itself has reserved
FILE_SIZE_MIB = 256  # the largest file the step (or the saved scene) may write
OPEN_FILES = 256
# The step's only writable space: two memory file systems of its own, gone with the step.
# /sandbox holds the scene it opens and the one it saves (and Blender's temporary copy).
WORK_MIB = 3 * FILE_SIZE_MIB
TMP_MIB = 64
# Threads (and so processes) the whole sandbox may hold at once: Blender starts one a core.
THREADS = 512
# Wall-clock grace after timeout_ms before the bridge kills the sandbox itself: the child's
# own timer fires first; this catches a child that cannot (stuck in C code).
KILL_GRACE_MS = 2_000
# Opening the scene and saving it again run inside the sandbox too, outside timeout_ms.
SCENE_IO_MS = 30_000


def code_sha256(code: str) -> str:
    """``sha256:<hex>`` of the UTF-8 bytes of ``code``: the name of exactly this text."""
    return "sha256:" + hashlib.sha256(code.encode("utf-8")).hexdigest()
