"""The web console in a real headless Chromium against the whole mesh and the HTTP gateway.

A user adds a cube, asks to delete it (destructive: policy asks a human), approves in the
page, then sees the completed run, its audit trail and the scene's preview render.
Uses Debian's chromium through Playwright's driver only (no downloaded browser).

The tests share one ``blendmesh up``; each signs in with a token of its own user, so none
sees another's runs, scenes or waiting approvals.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.support.meshes import blendmesh_up

CHROMIUM = Path("/usr/bin/chromium")
# Each test's user and the token it signs in with.
TOKENS = {user: f"e2e-token-{user}" for user in ("ana", "bea", "cai")}
SCENE = "browser"
RUN_TIMEOUT_MS = 90_000

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
    # The shared browser lives on the module's event loop, so its tests run there too.
    pytest.mark.asyncio(loop_scope="module"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tokens = ",".join(f"{token}={user}" for user, token in TOKENS.items())
    # Previews on: the console shows each revision's picture and 3D view.
    env = {"BLENDMESH_API_TOKENS": tokens, "BLENDMESH_USER": "ana", "BLENDMESH_PREVIEWS": "1"}
    with blendmesh_up(tmp_path_factory.mktemp("home"), "--port", "0", env=env) as up:
        yield up.gateway_url.rstrip("/")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    """One Chromium for the module's tests (starting one takes seconds); each test opens a
    context of its own in it."""
    async with playwright_api.async_playwright() as p:
        launched = await p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            yield launched
        finally:
            await launched.close()


@contextlib.asynccontextmanager
async def fresh_page(browser: Any, shots: pytest.TempPathFactory, name: str) -> AsyncIterator[Any]:
    """A page in a browser context of its own (no storage of another test's, as a new
    profile); a screenshot ``name`` of the page when the test fails in it."""
    context = await browser.new_context()
    page = await context.new_page()
    try:
        yield page
    except BaseException:
        shot = shots.mktemp("screenshots") / name
        with contextlib.suppress(Exception):
            await page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failing page: {shot}")
        raise
    finally:
        await context.close()


async def test_console_when_destructive_run_approved_shows_result_audit_and_preview(
    browser: Any, console_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expect = playwright_api.expect
    async with fresh_page(browser, tmp_path_factory, "console-failure.png") as page:
        await page.goto(console_url + "/")
        await page.get_by_label("API token").fill(TOKENS["ana"])
        await page.get_by_label("Scene id").fill(SCENE)
        status = page.get_by_test_id("run-status")

        await page.get_by_label("What should change?").fill("add a cube named Victim")
        await page.get_by_test_id("submit").click()
        await expect(status).to_have_text("completed", timeout=RUN_TIMEOUT_MS)

        await page.get_by_label("What should change?").fill("delete Victim")
        await page.get_by_test_id("submit").click()
        approval = page.get_by_test_id("approval")
        await expect(approval).to_be_visible(timeout=RUN_TIMEOUT_MS)
        await expect(approval.get_by_test_id("pending-operation")).to_contain_text("object.delete")
        await expect(status).to_have_text("awaiting_confirmation")
        # Opened again, the console lists what waits for its user before anything is run.
        await page.reload()
        await expect(approval).to_be_visible(timeout=30_000)
        await expect(approval.get_by_test_id("pending-operation")).to_contain_text(
            '"name":"Victim"'
        )
        await expect(page.get_by_test_id("event-log")).to_be_empty()
        await approval.get_by_test_id("approve").click()

        await expect(status).to_have_text("completed", timeout=RUN_TIMEOUT_MS)
        await expect(page.get_by_test_id("action-row")).to_contain_text("object.delete")
        audit_rows = page.get_by_test_id("audit-row")
        await expect(audit_rows.first).to_be_visible(timeout=30_000)
        await expect(audit_rows.filter(has_text="object.delete")).not_to_have_count(0)
        preview = page.get_by_test_id("preview")
        await expect(preview).to_have_attribute("src", re.compile("^blob:"), timeout=30_000)
        await page.wait_for_function(
            "() => document.getElementById('preview').naturalWidth > 0", timeout=30_000
        )
        assert await page.get_by_test_id("download-blend").get_attribute("href")
        await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_console_when_request_refused_keeps_the_messages_line_breaks(
    browser: Any, console_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expect = playwright_api.expect
    async with fresh_page(browser, tmp_path_factory, "console-refusal.png") as page:
        await page.goto(console_url + "/")
        await page.get_by_label("API token").fill(TOKENS["bea"])
        await page.get_by_label("Scene id").fill("refused")
        await page.get_by_label("What should change?").fill(
            "add a cube, then paint it like van gogh"
        )
        await page.get_by_test_id("submit").click()
        status = page.get_by_test_id("run-status")
        await expect(status).to_have_text("failed", timeout=RUN_TIMEOUT_MS)
        summary = await page.get_by_test_id("run-summary").inner_text()
        # The offline planner's grammar comes on lines of its own, as it was written.
        assert "\n  color <N> <color>" in summary or "\ncolor <N> <color>" in summary, summary


async def test_console_when_scene_picked_shows_history_and_reverts_after_approval(
    browser: Any, console_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expect = playwright_api.expect
    async with fresh_page(browser, tmp_path_factory, "console-scenes.png") as page:
        await page.goto(console_url + "/")
        await page.get_by_label("API token").fill(TOKENS["cai"])
        await page.get_by_label("Scene id").fill("picked")
        status = page.get_by_test_id("run-status")
        for prompt in ("add a cube named First", "add a cube named Second at 3 0 0"):
            await page.get_by_label("What should change?").fill(prompt)
            await page.get_by_test_id("submit").click()
            await expect(status).to_have_text("completed", timeout=RUN_TIMEOUT_MS)
        await page.get_by_label("Scene id").fill("elsewhere")

        await page.get_by_test_id("scenes-refresh").click()
        picker = page.get_by_label("Pick a scene")
        await expect(picker.locator("option", has_text="picked")).to_have_count(1)
        await picker.select_option("picked")
        # Chosen, it is the scene of the next request, and shows what it holds.
        await expect(page.get_by_label("Scene id")).to_have_value("picked")
        summary = page.get_by_test_id("scene-summary")
        await expect(summary).to_contain_text("scene picked at revision 2", timeout=30_000)
        await expect(summary).to_contain_text("Second [MESH]")
        rows = page.get_by_test_id("history-row")
        await expect(rows).to_have_count(2)
        await expect(rows.first).to_contain_text("object.create")
        await expect(page.get_by_test_id("preview")).to_have_attribute(
            "src", re.compile("^blob:"), timeout=30_000
        )

        revert = page.get_by_role("button", name="Revert picked to revision 1")
        await revert.click()
        approval = page.get_by_test_id("approval")
        await expect(approval).to_be_visible(timeout=RUN_TIMEOUT_MS)
        await expect(approval.get_by_test_id("pending-operation")).to_contain_text("scene.revert")
        await expect(status).to_have_text("awaiting_confirmation")
        await approval.get_by_test_id("approve").click()
        await expect(status).to_have_text("completed", timeout=RUN_TIMEOUT_MS)

        await page.get_by_test_id("scenes-refresh").click()
        await expect(rows).to_have_count(3, timeout=30_000)
        await expect(rows.first).to_contain_text("scene.revert")
        await expect(summary).to_contain_text("scene picked at revision 3")
        await expect(summary).not_to_contain_text("Second")
        await expect(page.get_by_test_id("error")).to_be_hidden()
