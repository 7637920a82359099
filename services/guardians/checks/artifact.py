"""Reading a revision's artifact, and the one result shape every guardian returns."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from contracts.errors import BlendmeshError
from contracts.inspection import FILE_NAME, VERSION, Inspection, decode

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024  # far above any scene; a runaway file fails closed
MAX_MESSAGES = 20  # per guardian: enough to act on, few enough for a model's context


class ArtifactError(BlendmeshError, ValueError):
    """The folder holds no artifact a guardian can trust."""


# The artifact decoded last within ``decoded_once``, with the bytes it was decoded from.
_decoded: ContextVar[list[tuple[bytes, Inspection]] | None] = ContextVar(
    "decoded_artifact", default=None
)


@contextmanager
def decoded_once() -> Iterator[None]:
    """Within: guardians that read the same artifact bytes share one decoded artifact
    (decoding a 1000-object scene's takes milliseconds, and a gate set runs up to nine
    guardians on it). Each guardian still reads the file and compares the bytes, so one
    whose file differs decodes its own; nothing outlives the block. The shared artifact
    is frozen, and guardians only read it."""
    token = _decoded.set([])
    try:
        yield
    finally:
        _decoded.reset(token)


def read_file(repo_path: str, name: str) -> bytes:
    """The bytes of ``<repo_path>/<name>``, opened read-only; it must be a regular file.

    Raises ``FileNotFoundError`` when it is absent and ``ArtifactError`` when it is not a
    regular file or is larger than the cap. Opened without blocking, so a FIFO planted in
    the folder fails the guardian instead of hanging it.
    """
    fd = os.open(Path(repo_path, name), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactError(f"{name} is not a regular file")
        if info.st_size > MAX_ARTIFACT_BYTES:
            raise ArtifactError(f"{name} is larger than {MAX_ARTIFACT_BYTES} bytes")
        data = file.read(MAX_ARTIFACT_BYTES + 1)
    if len(data) > MAX_ARTIFACT_BYTES:  # it grew while we read it
        raise ArtifactError(f"{name} is larger than {MAX_ARTIFACT_BYTES} bytes")
    return data


def load(repo_path: str) -> Inspection:
    """The artifact in ``repo_path``; raises when it is missing, unreadable or not one."""
    inspection = decoded(read_file(repo_path, FILE_NAME))
    if inspection.version != VERSION:
        raise ArtifactError(f"{FILE_NAME} is version {inspection.version}, not {VERSION}")
    return inspection


def decoded(data: bytes) -> Inspection:
    """``data`` decoded, or the artifact already decoded from the same bytes within
    ``decoded_once``; raises msgspec's errors for bytes that are not an artifact."""
    last = _decoded.get()
    if last and last[0][0] == data:
        return last[0][1]
    inspection = decode(data)
    if last is not None:
        last[:] = [(data, inspection)]
    return inspection


def result(tool: str, gate: str, problems: list[str], **counts: int) -> dict[str, Any]:
    """A guardian's output: passed when ``problems`` is empty; the first messages kept."""
    messages = problems[:MAX_MESSAGES]
    if len(problems) > MAX_MESSAGES:
        messages.append(f"... and {len(problems) - MAX_MESSAGES} more like these")
    return {
        "tool": tool,
        "gate": gate,
        "passed": not problems,
        "messages": messages,
        "problems": len(problems),
        **counts,
    }
