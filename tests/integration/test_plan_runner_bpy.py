"""The executor's guarantees on the real bpy bridge (see tests/support/runner_contract.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from services.executor.adapters.supervisor import SupervisedBridge
from tests.support.runner_contract import RunnerContract

pytestmark = pytest.mark.integration


class TestPlanRunnerOnBpyBridge(RunnerContract):
    @pytest.fixture
    async def bridge(self) -> AsyncIterator[SupervisedBridge]:
        real = SupervisedBridge(call_timeout=30)
        await real.start()
        try:
            yield real
        finally:
            await real.close()
