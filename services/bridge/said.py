"""What Blender said, fit for a user and a model: no traceback and no host path.

An importer written in Python that raises inside an operator reaches the bridge as a
RuntimeError whose text is the whole traceback, each frame with the path of the
installation (``.../site-packages/bpy/5.0/scripts/...``), and a ``Location:`` line. Users
and models see only the error itself; the bridge's own log keeps the whole of it.
"""

from __future__ import annotations

import re

_TRACEBACK = "Traceback (most recent call last):"
# An absolute POSIX or Windows path: shown by its last part only.
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[\\/][^\s\\/'\":,;()]+){2,}[\\/]?")
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Exit)\b.*")
MAX_CHARS = 2000


def _last_part(match: re.Match[str]) -> str:
    return re.split(r"[\\/]", match.group(0).rstrip("/\\"))[-1] or "?"


def plain(message: str) -> str:
    """``message`` without a traceback (its last exception line is kept), ``Location:``
    lines or folders of any absolute path, and at most ``MAX_CHARS`` long."""
    head, found, rest = message.partition(_TRACEBACK)
    if found:
        lines = [line.strip() for line in rest.splitlines()]
        last = next((line for line in reversed(lines) if _EXCEPTION.match(line)), "")
        message = f"{head.strip()} {last}".strip() or "the importer failed"
    kept = [line for line in message.splitlines() if not line.strip().startswith("Location:")]
    text = _PATH.sub(_last_part, " ".join(line.strip() for line in kept if line.strip()))
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 3] + "..."
