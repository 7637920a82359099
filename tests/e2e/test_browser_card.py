"""The approval card as a person meets it in an MCP Apps host: the card's HTML, as
``/mcp`` serves it, inside a sandboxed iframe of a page that hosts it with the official
AppBridge (examples/typescript/apps_host.ts, @modelcontextprotocol/ext-apps), the run's
real tool result handed to it, and Approve clicked in real Chromium; the card's call goes
back through the host to the real MCP server. A card whose seal was altered says so and
changes nothing. Screenshots are saved in the test's tmp dir (printed) for a person."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
import pytest_asyncio

from services.doors.mcp.cards import CARD_URI, SEAL_KEY
from services.runtime.service.settings import Settings
from tests.e2e.test_browser import CHROMIUM
from tests.integration.test_mcp_host_approvals import ANA, host, waiting_delete
from tests.support.checked_session import APPS, HostSession
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import structured
from tests.support.meshes import mesh_fixture

EXAMPLES = Path(__file__).parents[2] / "examples" / "typescript"
ESBUILD = EXAMPLES / "node_modules" / ".bin" / "esbuild"
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.asyncio(loop_scope="module"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)
expect = playwright_api.expect


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmcard", user="local", previews=False)


mesh = mesh_fixture(client="test-card")


gateway = gateway_fixture({"tok-ana": "ana"})


@pytest.fixture(scope="module")
def host_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The host page's script: the official AppBridge, bundled for the browser."""
    out = tmp_path_factory.mktemp("host") / "apps_host.js"
    subprocess.run(
        [str(ESBUILD), "apps_host.ts", "--bundle", "--format=iife", f"--outfile={out}"],
        cwd=EXAMPLES, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return out


async def show_card(
    browser_page: Any, session: HostSession, script: Path, result: types.CallToolResult
) -> Any:
    """The card of ``result`` in a hosted iframe; its tool calls go to ``session``."""
    [page_html] = (await session.read_resource(CARD_URI)).contents  # type: ignore[arg-type]

    async def call_tool(params: dict[str, Any]) -> dict[str, Any]:
        answer = await session.call_tool(params["name"], params.get("arguments") or {})
        return answer.model_dump(by_alias=True, exclude_none=True, mode="json")

    await browser_page.expose_function("callTool", call_tool)
    await browser_page.set_content("<!doctype html><html><body></body></html>")
    await browser_page.add_script_tag(path=str(script))
    shown = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    await browser_page.evaluate("([h, r]) => window.showApp(h, r)", [page_html.text, shown])  # type: ignore[union-attr]
    return browser_page.frame_locator("iframe")


@pytest_asyncio.fixture(loop_scope="module")
async def page(tmp_path: Path) -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--no-first-run"]
        )
        try:
            yield await browser.new_page(viewport={"width": 700, "height": 520})
        finally:
            await browser.close()


async def test_card_when_approve_clicked_runs_the_operations(
    gateway: str, host_script: Path, page: Any, tmp_path: Path
) -> None:
    async with host(gateway, ANA, APPS) as session:
        waiting = await waiting_delete(session, "card-click")
        card = await show_card(page, session, host_script, waiting)
        await expect(card.locator("#summary")).to_contain_text("awaiting_confirmation")
        await expect(card.locator("#operations li")).to_contain_text(
            'object.delete (destructive) {"name":"Box"}'
        )
        await page.screenshot(path=tmp_path / "card-waiting.png")
        await card.get_by_role("button", name="Approve").click()
        await expect(card.locator("#outcome")).to_contain_text(
            "Approved: the run is completed", timeout=60_000
        )
        await expect(card.locator("#approval")).to_be_hidden()
        await page.screenshot(path=tmp_path / "card-approved.png")
        status = await session.call_tool("run_status", {"run_id": structured(waiting)["run_id"]})
    print(f"screenshots in {tmp_path}")
    assert structured(status)["status"] == "completed"
    assert structured(status)["receipts"][0]["result"]["name"] == "Box"


async def test_card_when_its_seal_was_altered_says_so_and_changes_nothing(
    gateway: str, host_script: Path, page: Any, tmp_path: Path
) -> None:
    async with host(gateway, ANA, APPS) as session:
        waiting = await waiting_delete(session, "card-altered")
        seal = (waiting.meta or {})[SEAL_KEY]
        altered = waiting.model_copy(update={"meta": {SEAL_KEY: "A" + seal[1:]}})
        card = await show_card(page, session, host_script, altered)
        await card.get_by_role("button", name="Reject").click()
        await expect(card.locator("#outcome")).to_contain_text("not valid for you")
        await expect(card.get_by_role("button", name="Approve")).to_be_enabled()
        await page.screenshot(path=tmp_path / "card-refused.png")
        status = await session.call_tool("run_status", {"run_id": structured(waiting)["run_id"]})
    print(f"screenshots in {tmp_path}")
    assert structured(status)["status"] == "awaiting_confirmation"
