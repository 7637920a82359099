"""A real nats-server for the real adapters: logged in as the role that owns their buckets.

The fakes need none of this; each contract module runs its fake and its real adapter
through the same test class.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.doors.cli.mesh import Mesh
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh, role_bus


@pytest.fixture
async def nats_mesh(tmp_path: Path) -> AsyncIterator[Mesh]:
    async with bare_mesh(Settings(home=tmp_path / "home", prefix="bmcontract")) as running:
        yield running


@pytest.fixture
async def executor_bus(nats_mesh: Mesh) -> AsyncIterator[Bus]:
    """The executor's login: it owns the journal, leases, scene and preview buckets."""
    async with role_bus(nats_mesh, "executor") as bus:
        yield bus


@pytest.fixture
async def policy_bus(nats_mesh: Mesh) -> AsyncIterator[Bus]:
    """The policy service's login: it owns the allowlist bucket."""
    async with role_bus(nats_mesh, "policy") as bus:
        yield bus
