"""A real Blender bridge killed under its supervisor moves ``blendmesh_bridge_restarts_total``
for its role, and only for its role."""

from __future__ import annotations

import os
import signal

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.executor.adapters.supervisor import SupervisedBridge
from services.runtime.service import metrics
from tests.integration.test_bridge_supervisor import _one_bridge, _started_again

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def restarts(role: str) -> float:
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == "blendmesh_bridge_restarts_total" and sample.labels == {
                "bridge": role
            }:
                return float(sample.value)
    return 0.0


async def test_bridge_when_preview_blender_is_killed_counts_a_preview_restart() -> None:
    before = restarts("preview"), restarts("run")
    bridge = SupervisedBridge(call_timeout=30, role="preview")
    await bridge.start()
    try:
        os.kill(await _one_bridge(), signal.SIGKILL)
        await _started_again(bridge, restarts=1)
    finally:
        await bridge.close()
    assert restarts("preview") == before[0] + 1
    assert restarts("run") == before[1]
