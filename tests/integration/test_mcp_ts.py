"""The official TypeScript SDK's clients at ``/mcp`` on a real mesh and real Blender: the
1.x line (2025-11-25) answers approvals with its form-elicitation handler, the 2.x line
(2026-07-28) with its input-required handling, each through the bearer token of a user
of its own; every schema blendmesh declares compiles in the SDK's validator, every
answer matches its tool's outputSchema, and a run cancelled while the person is asked
ends cancelled (``tests/support/ts_mcp.py`` checks the report)."""

from __future__ import annotations

import pytest

from services.runtime.service.settings import Settings
from tests.support import ts_mcp
from tests.support.gateways import gateway_fixture
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(ts_mcp.missing() is not None, reason=str(ts_mcp.missing())),
]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmts", user="local", previews=False)


mesh = mesh_fixture(client="test-mcp-ts")
gateway = gateway_fixture(TOKENS)


async def test_sdk_1x_at_mcp_speaks_2025_11_25_and_approves_by_elicitation(gateway: str) -> None:
    report = await ts_mcp.drive("sdk-1.x", "ts-http-1", "http", f"{gateway}/mcp", "tok-ana")
    ts_mcp.check(report, "sdk-1.x")
    # blendmesh serves tasks only as the 2026-07-28 extension: none declared here.
    assert report["tasks"]["server_declares"] is False


async def test_client_2x_at_mcp_speaks_2026_07_28_and_approves_by_mrtr(gateway: str) -> None:
    report = await ts_mcp.drive("client-2.x", "ts-http-2", "http", f"{gateway}/mcp", "tok-ben")
    ts_mcp.check(report, "client-2.x")
    ts_mcp.check_client_2x(report)
