"""The executor's guarantees on the in-memory bridge (see tests/runner_contract.py)."""

from __future__ import annotations

import pytest

from tests.fake_bridge import FakeBridge
from tests.runner_contract import RunnerContract


class TestPlanRunnerOnFakeBridge(RunnerContract):
    @pytest.fixture
    def bridge(self) -> FakeBridge:
        return FakeBridge()
