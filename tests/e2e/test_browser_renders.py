"""A render job's contact sheet in the web console, in a real headless Chromium against
``blendmesh up``: every frame of the job as a thumbnail, in frame order, and another
user's job shown as an unknown one (docs/renders.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_browser import CHROMIUM
from tests.e2e.test_browser_console import browser, console, expect, run
from tests.support.meshes import blendmesh_up

ANA, BEN = "tok-ana", "tok-ben"
__all__ = ["browser"]  # the module's shared Chromium, as test_browser_console makes it

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
    pytest.mark.asyncio(loop_scope="module"),
]


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {"BLENDMESH_API_TOKENS": f"{ANA}=ana,{BEN}=ben", "BLENDMESH_PREVIEWS": "0"}
    with blendmesh_up(tmp_path_factory.mktemp("home"), "--port", "0", env=env) as up:
        yield up.gateway_url.rstrip("/")


async def test_console_when_a_render_job_is_opened_shows_its_contact_sheet(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    async with console(browser, console_url, ANA, tmp_path, "sheet") as page:
        await run(page, "sheeted", "add a cube named Box")
        async with httpx.AsyncClient(base_url=console_url, timeout=60) as http:
            asked = await http.post(
                "/api/scenes/sheeted/renders",
                json={"frames": "1-6", "engine": "workbench", "samples": 1, "size": "48x32"},
                headers={"Authorization": f"Bearer {ANA}"},
            )
        assert asked.status_code == 202, asked.text
        job_id = asked.json()["jobId"]
        await page.goto(f"{console_url}/#render={job_id}")
        status = page.get_by_test_id("sheet-status")
        await expect(status).to_contain_text("completed, 6 of 6 frames", timeout=120_000)
        frames = page.get_by_test_id("sheet-frame")
        await expect(frames).to_have_count(6)
        assert await frames.evaluate_all("els => els.map(e => e.dataset.frame)") == [
            str(n) for n in range(1, 7)
        ]
        widths = await page.locator("#sheet img").evaluate_all(
            "els => els.map(e => e.naturalWidth)"
        )
        assert widths == [48] * 6
    async with console(browser, console_url, BEN, tmp_path, "sheet-ben") as page:
        await page.goto(f"{console_url}/#render={job_id}")
        await expect(page.get_by_test_id("sheet-status")).to_contain_text(
            f"NotFound: no render job {job_id}", timeout=30_000
        )
        await expect(page.get_by_test_id("sheet-frame")).to_have_count(0)
