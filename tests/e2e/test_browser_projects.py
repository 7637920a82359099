"""The web console's projects view and a lead's inbox in a real headless Chromium against
``blendmesh up``: lea leads shot010, ben is its artist; ben's destructive run waits for a
lead, lea's console shows the project and that run, and lea approves it there."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.e2e.test_browser import CHROMIUM
from tests.support.meshes import blendmesh_up

LEA, BEN = "tok-lea", "tok-ben"
RUN_TIMEOUT_MS = 90_000

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
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"BLENDMESH_API_TOKENS": f"{LEA}=lea,{BEN}=ben", "BLENDMESH_USER": "lea"}
    with blendmesh_up(tmp_path_factory.mktemp("home"), "--port", "0", env=env) as up:
        yield up.gateway_url.rstrip("/")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    async with playwright_api.async_playwright() as p:
        launched = await p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--no-first-run"]
        )
        try:
            yield launched
        finally:
            await launched.close()


@contextlib.asynccontextmanager
async def console(browser: Any, url: str, token: str, shot: Path) -> AsyncIterator[Any]:
    context = await browser.new_context(viewport={"width": 1280, "height": 1000})
    page = await context.new_page()
    await page.add_init_script(f"localStorage.setItem('blendmesh.token', '{token}')")
    try:
        await page.goto(url + "/")
        yield page
    finally:
        with contextlib.suppress(Exception):
            await page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
        await context.close()


async def http(url: str, token: str, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        answer = await client.request(method, path, json=body)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


async def test_console_when_a_lead_looks_shows_the_project_and_approves_its_artists_run(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    made = await http(console_url, LEA, "POST", "/api/agent/run",
                      {"prompt": "add a cube named Hero", "sceneId": "shot"})  # fmt: skip
    assert made["status"] == "completed", made
    await http(console_url, LEA, "POST", "/api/projects", {"projectId": "shot010"})
    await http(console_url, LEA, "PUT", "/api/projects/shot010/members/ben", {"role": "artist"})
    await http(console_url, LEA, "PUT", "/api/projects/shot010/scenes/shot")
    await http(console_url, BEN, "POST", "/api/scenes/shot/lock", {"note": "anim"})
    asked = await http(console_url, BEN, "POST", "/api/agent/run",
                       {"prompt": "delete Hero", "sceneId": "shot"})  # fmt: skip
    assert asked["status"] == "awaiting_confirmation", asked

    async with console(browser, console_url, BEN, tmp_path / "artist.png") as page:
        card = page.get_by_test_id("project")
        await expect(card).to_contain_text("shot010: you are its artist", timeout=30_000)
        await expect(page.get_by_test_id("project-lock")).to_contain_text("shot is locked by ben")
        own = page.get_by_test_id("approval").filter(has_text=asked["runId"])
        await expect(own.get_by_test_id("waits-for-lead")).to_have_text(
            "ben's run waits for a lead of shot010.", timeout=30_000
        )

    async with console(browser, console_url, LEA, tmp_path / "lead.png") as page:
        card = page.get_by_test_id("project")
        await expect(card).to_contain_text("shot010: you are its lead", timeout=30_000)
        await expect(card.get_by_test_id("project-members")).to_have_text(
            "Members: ben (artist), lea (lead)"
        )
        await expect(card.get_by_test_id("project-scenes")).to_have_text("Scenes: shot")
        waiting = page.get_by_test_id("approval").filter(has_text=asked["runId"])
        await expect(waiting).to_have_count(1, timeout=30_000)
        await waiting.get_by_test_id("approve").click()
        await expect(waiting).to_have_count(0, timeout=RUN_TIMEOUT_MS)
        await expect(page.get_by_test_id("run-status")).to_have_text("completed")
        await expect(page.get_by_test_id("error")).to_be_hidden()  # lea follows what she approved
    runs = await http(console_url, BEN, "GET", "/api/runs")
    done = next(r for r in runs["runs"] if r["runId"] == asked["runId"])
    assert done["status"] == "completed", done
