"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against
``/mcp`` on a real mesh, for both revisions blendmesh speaks: the 2025-11-25 scenarios and
what 2026-07-28 requires. What it finds missing is listed, check by check and with the
reason, in ``tests/support/conformance/baseline-*.yml``; the suite fails the run on any
other failure and on any listed check that starts to pass.

The suite has no way to send a bearer token, so it reaches ``/mcp`` through a proxy that
adds one (``bearer_proxy``) and passes everything else, Host and Origin included. It
tests servers at a URL only: ``blendmesh mcp`` on stdio is driven by the official SDK
clients instead (``tests/e2e/test_mcp*.py``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from services.runtime.service.settings import Settings
from tests.support.bearer_proxy import bearer_proxy
from tests.support.gateways import gateway_fixture
from tests.support.meshes import mesh_fixture

SUITE = Path(__file__).resolve().parents[1] / "support" / "conformance"
CLI = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSTALLED = CLI.exists() and shutil.which("node") is not None

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(
        not INSTALLED,
        reason="the conformance suite is not installed: npm ci --prefix "
        "tests/support/conformance (as .ci/run does), with Node 20.6 or newer",
    ),
]

TOKENS = {"tok-ana": "ana"}
# The suite's client is a browser-like caller on the proxy's address: allowed as the
# gateway allows a proxy's names, so its DNS-rebinding probes meet the real refusals.
LOCAL = {
    "BLENDMESH_MCP_ALLOWED_HOSTS": "127.0.0.1:*,localhost:*",
    "BLENDMESH_MCP_ALLOWED_ORIGINS": "http://127.0.0.1:*,http://localhost:*",
}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmconf", user="local", previews=False, env=LOCAL)


mesh = mesh_fixture(client="test-mcp-conformance")
gateway = gateway_fixture(TOKENS)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def proxied(gateway: str) -> AsyncIterator[str]:
    async with bearer_proxy(gateway, "tok-ana") as url:
        yield f"{url}/mcp"


async def suite(url: str, out: Path, *selection: str) -> tuple[int, str]:
    """Run the suite's server scenarios at ``url``; its exit code and what it printed."""
    process = await asyncio.create_subprocess_exec(
        "node", "--import", str(SUITE / "register.mjs"), str(CLI), "server", "--url", url,
        "-o", str(out), *selection,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(SUITE),
    )  # fmt: skip
    printed, _ = await asyncio.wait_for(process.communicate(), 540)
    assert process.returncode is not None
    return process.returncode, printed.decode(errors="replace")


def passed(out: Path, scenario: str) -> list[str]:
    """The checks of ``scenario`` that passed in the run saved under ``out``."""
    [checks] = out.glob(f"server-{scenario}-*/checks.json")
    return [c["id"] for c in json.loads(checks.read_text()) if c["status"] == "SUCCESS"]


@pytest.mark.timeout(600)
async def test_2025_11_25_scenarios_fail_only_where_the_baseline_says_why(
    proxied: str, tmp_path: Path
) -> None:
    baseline = SUITE / "baseline-2025-11-25.yml"
    code, printed = await suite(
        proxied, tmp_path, "--spec-version", "2025-11-25", "--expected-failures", str(baseline)
    )
    assert code == 0, printed[-6000:]
    for scenario in ("server-initialize", "tools-list", "dns-rebinding-protection"):
        assert passed(tmp_path, scenario), scenario


@pytest.mark.timeout(600)
async def test_2026_07_28_requirements_fail_only_where_the_baseline_says_why(
    proxied: str, tmp_path: Path
) -> None:
    baseline = SUITE / "baseline-2026-07-28.yml"
    code, printed = await suite(
        proxied, tmp_path, "--requirements", "2026-07-28", "--expected-failures", str(baseline)
    )
    assert code == 0, printed[-6000:]
    assert "sep-2575-server-implements-discover" in passed(tmp_path, "server-stateless")
    assert passed(tmp_path, "sep-2164-resource-not-found")
    assert passed(tmp_path, "caching")
