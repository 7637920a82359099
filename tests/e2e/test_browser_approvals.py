"""Trusted Python in the web console, in a real headless Chromium: the console opens on the
approvals that wait for its user, shows each trusted step's code with its hash, and its
approve button quotes that hash.

The gateway and the audit service run on a real log; the run and its approval are
published as a client and the policy publish them (no planner makes python.trusted
operations yet), and what the page sent is read back from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from contracts.python_steps import code_sha256
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.e2e.test_browser import CHROMIUM
from tests.support.trusted_runs import audit_mesh_fixtures, resolutions, waiting_run

TOKEN = "tok-ana"
SNEAKY = "import bpy\n# \u202e looks harmless\nbpy.ops.wm.quit_blender()"

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)


mesh, policy_bus = audit_mesh_fixtures()


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmtrustweb", user="ana", previews=False
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def console_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    # A short wait for the run's answer: no policy runs here to answer the approval.
    app = create_app(mesh[0].settings, mesh[1], Tokens({TOKEN: "ana"}), run_timeout=1.0)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield url.rstrip("/")
    finally:
        await server.stop()


async def listed(url: str, run_id: str) -> None:
    """Once the audit views list the run (a moment after the log has it)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=url, headers=headers) as http:
        for _ in range(100):
            pending = (await http.get("/api/agent/approvals/pending")).json()["approvals"]
            if any(a["runId"] == run_id for a in pending):
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} is not listed as pending")


async def test_console_when_opened_lists_trusted_code_and_approve_quotes_its_hash(
    console_url: str,
    mesh: tuple[Mesh, Bus],
    policy_bus: Bus,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run_id = await waiting_run(mesh, policy_bus, SNEAKY)
    digest = code_sha256(SNEAKY)
    await listed(console_url, run_id)
    expect = playwright_api.expect
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        page = await browser.new_page()
        try:
            # A returning user: the token is in this browser already, nothing is submitted.
            await page.add_init_script(f"localStorage.setItem('blendmesh.token', '{TOKEN}')")
            await page.goto(console_url + "/")
            card = page.get_by_test_id("approval")
            await expect(card).to_be_visible(timeout=30_000)
            await expect(card).to_contain_text(run_id)
            operations = card.get_by_test_id("pending-operation")
            await expect(operations.first).to_contain_text(
                'object.delete (destructive) {"name":"Box"}'
            )
            await expect(card.get_by_test_id("code-sha256")).to_have_text(digest)
            shown = await card.get_by_test_id("trusted-code").inner_text()
            assert shown.splitlines() == [
                "1 | import bpy",
                "2 | # \\u202e looks harmless",
                "3 | bpy.ops.wm.quit_blender()",
            ]
            assert '"code":' not in await operations.nth(1).first.inner_text()
            await card.get_by_test_id("approve").click()
            error = page.get_by_test_id("error")
            await expect(error).to_contain_text("Timeout", timeout=30_000)
        except BaseException:
            shot = tmp_path_factory.mktemp("screenshots") / "trusted-console-failure.png"
            with contextlib.suppress(Exception):
                await page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot of the failing page: {shot}")
            raise
        finally:
            await browser.close()
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "approve_once" and resolution.code_sha256 == [digest]
