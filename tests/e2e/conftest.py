"""The ``blendmesh up`` the e2e tests share when they need only a running mesh."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.joined_mesh import Joined, SharedMesh, shared_mesh


@pytest.fixture(scope="session")
def _shared_mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedMesh]:
    # Session-wide: each pytest process starts it once, when its first test joins, and
    # every later module's tests join the same one (tests/support/joined_mesh.py).
    with shared_mesh(tmp_path_factory.mktemp("shared-mesh")) as mesh:
        yield mesh


@pytest.fixture
def joined(_shared_mesh: SharedMesh) -> Joined:
    """This test's user and scene ids on the shared mesh."""
    return Joined.seat(_shared_mesh)
