"""A mesh that is up leaves what it holds out of the garbage collector's passes, and
puts it back when it stops (``services.runtime.service.heap``)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from services.doors.cli.mesh import Mesh
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration


async def test_mesh_when_up_freezes_the_heap_and_when_stopped_thaws_it(tmp_path: Path) -> None:
    gc.unfreeze()
    settings = Settings(home=tmp_path, prefix="bmheap", user="local", previews=False)
    async with Mesh(settings, services=["audit"]) as mesh:
        frozen = gc.get_freeze_count()
        assert mesh.url
    assert frozen > 10_000  # the SDKs' objects, at the least
    assert gc.get_freeze_count() == 0


async def test_mesh_when_start_fails_leaves_nothing_frozen(tmp_path: Path) -> None:
    gc.unfreeze()
    settings = Settings(home=tmp_path, prefix="bmheap", user="local", previews=False)
    with pytest.raises(KeyError, match="no-such-service"):  # no login for such a role
        async with Mesh(settings, services=["no-such-service"]):
            pass
    assert gc.get_freeze_count() == 0
