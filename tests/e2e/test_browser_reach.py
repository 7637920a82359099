"""The console stays true in a real headless Chromium: the runs list updates its rows in
place (the keyboard focus stays where the person left it) and shows each run's request,
the page fits a phone's 390 px, and when the mesh stops the page says so, disables what
cannot work, and comes back by itself once the mesh runs again.

Screenshots of each state go to the test's tmp dir (printed) for a person to look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e import test_browser_console as shared
from tests.e2e.test_browser_console import ANA, CHROMIUM, RUN_TIMEOUT_MS, api_run, console, snap
from tests.support.clusters import free_ports
from tests.support.meshes import blendmesh_up

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.asyncio(loop_scope="module"),
]
browser = shared.browser  # the fixtures, by name: one Chromium and one mesh per module
console_url = shared.console_url
expect = shared.expect
PHONE = {"width": 390, "height": 844}
WIDTH = "() => document.documentElement.scrollWidth"
# What sticks out past the viewport, for the failure message.
WIDEST = """() => [...document.querySelectorAll("body *")]
  .filter((e) => e.getBoundingClientRect().right > innerWidth)
  .filter((e) => !e.parentElement.closest(".scroll"))
  .slice(0, 8).map((e) => `${e.tagName}#${e.id} ${e.getBoundingClientRect().right}`)"""


async def test_runs_when_a_new_run_arrives_keep_focus_show_requests_and_fit_390_px(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    first = await api_run(console_url, ANA, "narrow", "add a cube named Narrow at 0 0 1")
    async with console(browser, console_url, ANA, tmp_path, "runs-phone") as page:
        await page.set_viewport_size(PHONE)
        row = page.get_by_test_id("run-row").filter(has_text=first["runId"])
        await expect(row).to_contain_text("add a cube named Narrow at 0 0 1", timeout=30_000)
        # The person tabs to the run's Show button, then other runs arrive and poll on.
        show = row.get_by_test_id("show-run")
        await show.focus()
        await page.keyboard.press("Shift+Tab")
        await page.keyboard.press("Tab")
        assert await show.evaluate("(b) => b === document.activeElement")
        second = await api_run(console_url, ANA, "narrow", "add a sphere named Ball")
        newest = page.get_by_test_id("run-row").first
        await expect(newest).to_contain_text(second["runId"], timeout=30_000)
        await expect(newest).to_contain_text("add a sphere named Ball")
        await page.wait_for_timeout(4_500)  # two more rounds of the list being read
        focused = await page.evaluate(
            "() => document.activeElement.closest('tr')?.dataset.runId ?? null"
        )
        assert focused == first["runId"]
        await page.keyboard.press("Enter")  # the focus was kept: Enter shows that run
        await expect(page.get_by_test_id("run-id")).to_have_text(first["runId"])
        wide = await page.evaluate(WIDEST)
        assert await page.evaluate(WIDTH) <= PHONE["width"], wide
        await snap(page, tmp_path, "runs-phone-390")
        # A run made without words, an import, is listed by what it does.
        imported = await api_import(console_url, ANA, "narrow_file")
        row = page.get_by_test_id("run-row").filter(has_text=imported)
        await expect(row).to_contain_text("import a .blend (1 KB)", timeout=30_000)


async def api_import(url: str, token: str, scene: str) -> str:
    """A file pushed as a new scene (the add-on's push, the CLI's import): the run's id.
    This file is only a .blend's header, so the run fails: listed, it shows what it was."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/octet-stream"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
        body = b"BLENDER-v405RENDH" + b"\0" * 1000
        answer = await http.post(f"/api/scenes/{scene}/import", content=body)
    assert answer.status_code == 200 and answer.json()["run"]["status"] == "failed", answer.text
    run_id: str = answer.json()["run"]["runId"]
    return run_id


async def test_console_when_the_mesh_stops_says_so_disables_approving_and_recovers(
    browser: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    port = free_ports(1)[0]
    env = {"BLENDMESH_API_TOKENS": f"{ANA}=ana"}
    args = ("--port", str(port))
    with blendmesh_up(home, *args, env=env) as up:
        url = up.gateway_url.rstrip("/")
        await api_run(url, ANA, "away", "add a cube named Stay")
        waiting = await api_run(url, ANA, "away", "delete Stay")
        assert waiting["status"] == "awaiting_confirmation", waiting
        page_cm = console(browser, url, ANA, tmp_path, "mesh-away")
        page = await page_cm.__aenter__()
        try:
            approve = page.get_by_test_id("approval").get_by_test_id("approve")
            await expect(approve).to_be_enabled(timeout=30_000)
            await expect(page.get_by_test_id("offline")).to_be_hidden()
            up.proc.send_signal(2)  # the mesh stops, the page stays open
            up.proc.wait(timeout=120)
            offline = page.get_by_test_id("offline")
            await expect(offline).to_contain_text(
                "The mesh cannot be reached since", timeout=15_000
            )
            await expect(approve).to_be_disabled()
            await expect(page.get_by_test_id("submit")).to_be_disabled()
            await expect(page.get_by_test_id("runs-note")).to_have_text(
                "Not up to date: the mesh cannot be reached."
            )
            await snap(page, tmp_path, "mesh-unreachable")
            # The mesh comes back on the same port and home: the page recovers by itself,
            # and the approval, kept in the log, can be given.
            with blendmesh_up(home, *args, env=env):
                await expect(offline).to_be_hidden(timeout=60_000)
                await expect(approve).to_be_enabled()
                await approve.click()
                run = page.get_by_test_id("run-row").filter(has_text=waiting["runId"])
                await expect(run.get_by_test_id("run-state")).to_have_text(
                    "completed", timeout=RUN_TIMEOUT_MS
                )
                await snap(page, tmp_path, "mesh-back-approved")
        finally:
            await page_cm.__aexit__(None, None, None)
