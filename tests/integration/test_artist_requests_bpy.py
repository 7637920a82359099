"""The artist requests the rules planner understands, executed on real bpy through a real
bridge: each must leave the scene as its request says (tests/fixtures/artist_requests.py)."""

from __future__ import annotations

import pytest

from contracts.scenes import summarize
from services.executor.adapters.bridge_client import BridgeProcess
from services.planner.rules.parse import plan_request
from tests.fixtures.artist_requests import REQUESTS, Request
from tests.support.artist_scene import TOOLS, build_calls, catalog, mismatches, view
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()
CATALOG = catalog()


async def execute(bridge: BridgeProcess, request: Request) -> list[str]:
    """Build the request's scene, plan the request against its real snapshot, run every
    operation; what of the expected state the scene then lacks (empty: all correct)."""
    for tool, args in build_calls(request.scene):
        await ok(bridge, tool, **args)
    before = (await ok(bridge, "scene.snapshot")).data
    operations = plan_request(request.text, "req", CATALOG, None, summarize("s", before))
    for op in operations.operations:
        result = await call(bridge, op.tool_name, **op.args)
        if not result.ok:
            return [f"{op.operation_id} {op.tool_name} failed: {result.message}"]
    after = (await ok(bridge, "scene.snapshot")).data
    return mismatches(request, view(after))


async def test_bridge_when_listing_tools_has_every_tool_the_planner_plans_with(bridge):
    names = {tool["name"] for tool in await bridge.list_tools()}
    assert set(TOOLS) <= names


@pytest.mark.parametrize("request_", [r for r in REQUESTS if r.understood], ids=lambda r: r.text)
async def test_artist_request_when_executed_leaves_the_expected_scene(bridge, request_: Request):
    assert await execute(bridge, request_) == []
