"""Each flow test gets the whole mesh's handlers on a fresh in-memory bus."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.memory_mesh import MemoryMesh, memory_mesh


@pytest.fixture
async def mesh(tmp_path: Path) -> AsyncIterator[MemoryMesh]:
    built = await memory_mesh(tmp_path)
    try:
        yield built
    finally:
        await built.close()
