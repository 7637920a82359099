"""The web console's own views in a real headless Chromium against ``blendmesh up``: who
the token is, the user's runs, the approvals inbox, refreshing as runs end, the large
before/after preview and the 3D view of a revision.

Each test saves a screenshot of what it checked in its own tmp dir (printed), for a person
to look at; none is kept in the repository.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_browser import CHROMIUM
from tests.meshes import blendmesh_up

ANA, CLI = "tok-ana", "tok-cli"
RUN_TIMEOUT_MS = 90_000

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)
expect = playwright_api.expect


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The mesh (and so the CLI on its machine) runs as cli; ana has a token of her own.
    env = {"BLENDMESH_API_TOKENS": f"{ANA}=ana,{CLI}=cli", "BLENDMESH_USER": "cli"}
    with blendmesh_up(tmp_path_factory.mktemp("home"), "--port", "0", env=env) as up:
        yield up.gateway_url.rstrip("/")


@contextlib.asynccontextmanager
async def console(url: str, token: str, shots: Path, name: str) -> AsyncIterator[Any]:
    """A page on the console with ``token`` remembered; a screenshot ``name`` on the way out."""
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--no-first-run", "--use-angle=swiftshader"],
        )
        page = await browser.new_page(viewport={"width": 1280, "height": 1000})
        await page.add_init_script(f"localStorage.setItem('blendmesh.token', '{token}')")
        try:
            await page.goto(url + "/")
            yield page
        finally:
            shot = shots / f"{name}.png"
            with contextlib.suppress(Exception):
                await page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot: {shot}")
            await browser.close()


async def snap(page: Any, shots: Path, name: str) -> None:
    shot = shots / f"{name}.png"
    await page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")


async def run(page: Any, scene: str, prompt: str, status: str = "completed") -> None:
    await page.get_by_label("Scene id").fill(scene)
    await page.get_by_label("What should change?").fill(prompt)
    await page.get_by_test_id("submit").click()
    await expect(page.get_by_test_id("run-status")).to_have_text(status, timeout=RUN_TIMEOUT_MS)


async def test_console_when_token_is_not_the_mesh_user_says_who_is_who(
    console_url: str, tmp_path: Path
) -> None:
    async with console(console_url, ANA, tmp_path, "whoami") as page:
        await expect(page.get_by_test_id("whoami-user")).to_have_text("ana", timeout=30_000)
        hint = page.get_by_test_id("whoami-hint")
        await expect(hint).to_contain_text("as cli (BLENDMESH_USER)")
        await expect(hint).to_contain_text("BLENDMESH_USER=ana")
        await snap(page, tmp_path, "whoami-ana")
        await page.get_by_label("API token").fill(CLI)
        await page.get_by_label("API token").dispatch_event("change")
        await expect(page.get_by_test_id("whoami-user")).to_have_text("cli")
        await expect(hint).to_be_hidden()
        await page.get_by_label("API token").fill("not-a-token")
        await page.get_by_label("API token").dispatch_event("change")
        await expect(page.get_by_test_id("whoami")).to_have_text("This token is not valid.")
