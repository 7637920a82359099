"""The executor's guarantees on the real bpy bridge (see tests/support/runner_contract.py).

One Blender serves the module, its scene reset to empty before each test: starting one
per test cost more than the tests themselves. Each test still has a store, leases and
journal of its own (``runner`` keys them by the test's directory), and the one test that
makes Blender restart is the only one that counts restarts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from services.executor.adapters.supervisor import SupervisedBridge
from tests.support.runner_contract import RunnerContract

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_bridge() -> AsyncIterator[SupervisedBridge]:
    real = SupervisedBridge(call_timeout=30)
    await real.start()
    try:
        yield real
    finally:
        await real.close()


class TestPlanRunnerOnBpyBridge(RunnerContract):
    @pytest_asyncio.fixture(loop_scope="module")
    async def bridge(self, shared_bridge: SupervisedBridge) -> SupervisedBridge:
        await shared_bridge.reset()
        return shared_bridge
