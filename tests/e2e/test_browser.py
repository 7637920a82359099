"""The web console in a real headless Chromium against the whole mesh and the HTTP gateway.

A user adds a cube, asks to delete it (destructive: policy asks a human), approves in the
page, then sees the completed run, its audit trail and the scene's preview render.
Uses Debian's chromium through Playwright's driver only (no downloaded browser).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

CHROMIUM = Path("/usr/bin/chromium")
BLENDMESH = str(Path(sys.executable).parent / "blendmesh")
TOKEN = "e2e-token"
SCENE = "browser"
RUN_TIMEOUT_MS = 90_000

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)


async def _read_url(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    seen: list[str] = []
    while line := (await proc.stdout.readline()).decode(errors="replace"):
        seen.append(line)
        found = re.search(r"https?://[\w.\[\]:-]+", line)
        if found:
            return found.group(0).rstrip("/")
    raise AssertionError("blendmesh up printed no URL:\n" + "".join(seen))


@contextlib.asynccontextmanager
async def _up_process(home: Path) -> AsyncIterator[str]:
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    env.update({"BLENDMESH_API_TOKENS": f"{TOKEN}=ana", "BLENDMESH_USER": "ana"})
    proc = await asyncio.create_subprocess_exec(
        BLENDMESH,
        "--home",
        str(home),
        "up",
        "--port",
        "0",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        url = await asyncio.wait_for(_read_url(proc), 120)
        drain = asyncio.create_task(_drain(proc))
        yield url
        drain.cancel()
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def _drain(proc: asyncio.subprocess.Process) -> None:
    assert proc.stdout is not None
    while await proc.stdout.readline():
        pass


@pytest_asyncio.fixture
async def console_url(tmp_path: Path) -> AsyncIterator[str]:
    async with _up_process(tmp_path / "home") as url:
        yield url


async def test_console_when_destructive_run_approved_shows_result_audit_and_preview(
    console_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expect = playwright_api.expect
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(
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
            ],  # Playwright gives each launch a fresh, empty profile directory itself
        )
        page = await browser.new_page()
        try:
            await page.goto(console_url + "/")
            await page.get_by_label("API token").fill(TOKEN)
            await page.get_by_label("Scene id").fill(SCENE)
            status = page.get_by_test_id("run-status")

            await page.get_by_label("What should change?").fill("add a cube named Victim")
            await page.get_by_test_id("submit").click()
            await expect(status).to_have_text("completed", timeout=RUN_TIMEOUT_MS)

            await page.get_by_label("What should change?").fill("delete Victim")
            await page.get_by_test_id("submit").click()
            approval = page.get_by_test_id("approval")
            await expect(approval).to_be_visible(timeout=RUN_TIMEOUT_MS)
            await expect(approval.get_by_test_id("pending-operation")).to_contain_text(
                "object.delete"
            )
            await expect(status).to_have_text("awaiting_confirmation")
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
        except BaseException:
            shot = tmp_path_factory.mktemp("screenshots") / "console-failure.png"
            with contextlib.suppress(Exception):
                await page.screenshot(path=str(shot), full_page=True)
                print(f"screenshot of the failing page: {shot}")
            raise
        finally:
            await browser.close()
