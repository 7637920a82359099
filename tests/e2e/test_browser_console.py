"""The web console's own views in a real headless Chromium against ``blendmesh up``: who
the token is, the user's runs, the approvals inbox, refreshing as runs end, the large
before/after preview and the 3D view of a revision.

Each test saves a screenshot of what it checked in its own tmp dir (printed), for a person
to look at; none is kept in the repository. The tests share one Chromium, each in a fresh
browser context of its own (its own storage, as a new profile would be).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from tests.e2e.test_browser import CHROMIUM
from tests.support.meshes import blendmesh_up

ANA, CLI = "tok-ana", "tok-cli"
RUN_TIMEOUT_MS = 90_000

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is not installed"),
    # The shared browser lives on the module's event loop, so its tests run there too.
    pytest.mark.asyncio(loop_scope="module"),
]
playwright_api = pytest.importorskip(
    "playwright.async_api", reason="the playwright package is not installed"
)
expect = playwright_api.expect


@pytest.fixture(scope="module")
def console_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # The mesh (and so the CLI on its machine) runs as cli; ana has a token of her own.
    env = {
        "BLENDMESH_API_TOKENS": f"{ANA}=ana,{CLI}=cli",
        "BLENDMESH_USER": "cli",
        "BLENDMESH_PREVIEWS": "1",  # the console shows pictures and 3D views
    }
    with blendmesh_up(tmp_path_factory.mktemp("home"), "--port", "0", env=env) as up:
        yield up.gateway_url.rstrip("/")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    """One Chromium for the module's tests: starting one takes seconds."""
    async with playwright_api.async_playwright() as p:
        launched = await p.chromium.launch(
            executable_path=str(CHROMIUM),
            # WebGL without a GPU: Chromium's software renderer.
            args=[
                "--headless",
                "--no-sandbox",
                "--no-first-run",
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
            ],
        )
        try:
            yield launched
        finally:
            await launched.close()


@contextlib.asynccontextmanager
async def console(browser: Any, url: str, token: str, shots: Path, name: str) -> AsyncIterator[Any]:
    """A page on the console with ``token`` remembered, in a browser context of its own (no
    storage of another test's); a screenshot ``name`` on the way out."""
    context = await browser.new_context(viewport={"width": 1280, "height": 1000})
    page = await context.new_page()
    await page.add_init_script(f"localStorage.setItem('blendmesh.token', '{token}')")
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.asked = asked  # every address the page fetched, for the no-CDN check
    try:
        await page.goto(url + "/")
        yield page
    finally:
        shot = shots / f"{name}.png"
        with contextlib.suppress(Exception):
            await page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
        await context.close()


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
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    async with console(browser, console_url, ANA, tmp_path, "whoami") as page:
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


async def api_run(url: str, token: str, scene: str, prompt: str) -> dict[str, Any]:
    """A run made elsewhere (another tab, the CLI as the same user): not by the page."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
        answer = await http.post("/api/agent/run", json={"prompt": prompt, "sceneId": scene})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


async def test_console_when_runs_end_elsewhere_lists_them_and_resolves_the_inbox(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    async with console(browser, console_url, ANA, tmp_path, "runs-inbox") as page:
        await expect(page.get_by_test_id("inbox-empty")).to_be_visible(timeout=30_000)
        runs = page.get_by_test_id("run-row")
        made = await api_run(console_url, ANA, "inbox", "add a cube named Keep")
        assert made["status"] == "completed", made
        # No reload, no click: the list and the scene picker catch up by themselves.
        row = runs.filter(has_text=made["runId"])
        await expect(row.get_by_test_id("run-state")).to_have_text("completed", timeout=30_000)
        picker = page.get_by_label("Pick a scene")
        await expect(picker.locator("option", has_text="inbox")).to_have_count(1)
        await api_run(console_url, ANA, "other", "add a cube named Gone")

        kept = await api_run(console_url, ANA, "inbox", "delete Keep")
        gone = await api_run(console_url, ANA, "other", "delete Gone")
        assert kept["status"] == gone["status"] == "awaiting_confirmation"
        cards = page.get_by_test_id("approval")
        await expect(cards).to_have_count(2, timeout=30_000)
        await expect(page.get_by_test_id("inbox-count")).to_have_text("(2)")
        await expect(runs.filter(has_text=kept["runId"])).to_contain_text("awaiting_confirmation")
        await snap(page, tmp_path, "inbox-two-waiting")

        await cards.filter(has_text=gone["runId"]).get_by_test_id("reject").click()
        await expect(cards).to_have_count(1, timeout=RUN_TIMEOUT_MS)
        await cards.filter(has_text=kept["runId"]).get_by_test_id("approve").click()
        await expect(page.get_by_test_id("inbox-empty")).to_be_visible(timeout=RUN_TIMEOUT_MS)
        await expect(runs.filter(has_text=kept["runId"]).get_by_test_id("run-state")).to_have_text(
            "completed", timeout=30_000
        )
        rejected = runs.filter(has_text=gone["runId"])
        await expect(rejected.get_by_test_id("run-state")).to_have_text("failed")
        await expect(rejected).to_contain_text("APPROVAL_REJECTED")

        # The chosen scene follows a run that ends on it, made elsewhere.
        await picker.select_option("inbox")
        summary = page.get_by_test_id("scene-summary")
        await expect(summary).to_contain_text("scene inbox at revision 2", timeout=30_000)
        later = await api_run(console_url, ANA, "inbox", "add a cube named Later")
        assert later["status"] == "completed", later
        await expect(summary).to_contain_text("Later [MESH]", timeout=30_000)
        await expect(page.get_by_test_id("history-row")).to_have_count(3)
        await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_console_when_a_waiting_run_is_cancelled_from_its_card_ends_it_and_keeps_the_scene(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    made = await api_run(console_url, ANA, "cancelled", "add a cube named Stays")
    assert made["status"] == "completed", made
    async with console(browser, console_url, ANA, tmp_path, "cancel-run") as page:
        asked = await api_run(console_url, ANA, "cancelled", "delete Stays")
        assert asked["status"] == "awaiting_confirmation", asked
        card = page.get_by_test_id("approval").filter(has_text=asked["runId"])
        await expect(card).to_have_count(1, timeout=30_000)
        await snap(page, tmp_path, "cancel-waiting")
        await card.get_by_test_id("cancel-run").click()
        await expect(page.get_by_test_id("run-status")).to_have_text("failed", timeout=30_000)
        await expect(page.get_by_test_id("run-summary")).to_have_text(
            "ana cancelled the run: cancelled in the console"
        )
        await expect(card).to_have_count(0)
        row = page.get_by_test_id("run-row").filter(has_text=asked["runId"])
        await expect(row).to_contain_text("RUN_CANCELLED", timeout=30_000)
        await page.get_by_label("Pick a scene").select_option("cancelled")
        summary = page.get_by_test_id("scene-summary")
        await expect(summary).to_contain_text("scene cancelled at revision 1", timeout=30_000)
        await expect(summary).to_contain_text("Stays")
        await expect(page.get_by_test_id("error")).to_be_hidden()


# Pixels of an image (drawn on a canvas): its size and a coarse fingerprint to compare.
PIXELS = """(id) => {
  const img = document.getElementById(id);
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let sum = 0;
  for (let i = 0; i < data.length; i += 4) sum += data[i] + data[i + 1] + data[i + 2];
  return [img.naturalWidth, img.naturalHeight, sum];
}"""


async def wiped(page: Any, tmp_path: Path) -> None:
    """The wipe: both pictures stacked, the slider moved by keyboard cuts "before" where
    it stands; at either end one picture shows whole."""
    wipe = page.get_by_test_id("wipe")
    await expect(wipe).to_be_visible()
    slider = page.get_by_label("Wipe: before on the left of the line, after on its right")
    clip = "() => document.getElementById('wipe-before').style.clipPath"
    await slider.focus()
    await page.keyboard.press("Home")
    assert await page.evaluate(clip) == "inset(0px 100% 0px 0px)"  # all "after"
    all_after = await wipe.screenshot()
    await page.keyboard.press("End")
    assert await page.evaluate(clip) == "inset(0px 0% 0px 0px)"  # all "before"
    all_before = await wipe.screenshot()
    assert all_after != all_before  # the pictures differ where the second cube is
    for _ in range(5):
        await page.keyboard.press("ArrowLeft")
    assert await page.evaluate(clip) == "inset(0px 5% 0px 0px)"
    await wipe.screenshot(path=str(tmp_path / "wipe-95.png"))


async def test_console_when_run_ends_shows_a_large_before_and_after(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    async with console(browser, console_url, ANA, tmp_path, "before-after") as page:
        await run(page, "compare", "add a cube named First")
        await expect(page.get_by_test_id("preview")).to_have_attribute(
            "src", re.compile("^blob:"), timeout=30_000
        )
        await run(page, "compare", "add a cube named Second at 3 0 0 and scale it by 2")
        heading = page.get_by_test_id("compare-heading")
        await expect(heading).to_contain_text("revision 2 of compare", timeout=30_000)
        for image in ("before", "after"):
            await expect(page.get_by_test_id(image)).to_have_attribute(
                "src", re.compile("^blob:"), timeout=30_000
            )
            await page.wait_for_function(
                f"() => document.getElementById('{image}').naturalWidth > 0", timeout=30_000
            )
        await expect(page.get_by_test_id("before-caption")).to_have_text("Revision 1")
        await expect(page.get_by_test_id("after-caption")).to_have_text("Revision 2")
        before = await page.evaluate(PIXELS, "before")
        after = await page.evaluate(PIXELS, "after")
        assert before[:2] == after[:2] == [960, 720], (before, after)
        assert before[2] != after[2]  # the second cube is in the picture
        preview = page.get_by_test_id("preview")
        await expect(page.locator("#preview-caption")).to_have_text("Rendered after revision 2.")
        assert await page.evaluate(PIXELS, "preview") == after  # the run's own picture
        box = await preview.bounding_box()
        assert box is not None and box["width"] >= 900, box  # shown large, not 320 wide
        await page.get_by_test_id("compare").scroll_into_view_if_needed()
        await snap(page, tmp_path, "before-after-view")
        await wiped(page, tmp_path)

        # From the history, the first revision compares with the empty scene.
        await page.get_by_test_id("scenes-refresh").click()
        await page.get_by_label("Pick a scene").select_option("compare")
        first = page.get_by_role("button", name="Compare compare revision 1 with the one before")
        await first.click()
        await expect(heading).to_contain_text("revision 1 of compare")
        await expect(page.get_by_test_id("before-caption")).to_contain_text("empty")

        # From the runs list, the second run: its audit trail, before/after and 3D view.
        second = page.get_by_test_id("run-row").first
        run_id = await second.get_attribute("data-run-id")
        await page.get_by_role("button", name=f"Show run {run_id}").click()
        await expect(heading).to_contain_text(f"revision 2 of compare by run {run_id}")
        await expect(
            page.get_by_test_id("audit-row").filter(has_text="object.transform")
        ).to_have_count(1)
        await expect(page.get_by_test_id("viewer-heading")).to_have_text(
            "3D view of revision 2 of compare", timeout=30_000
        )
        await expect(page.get_by_test_id("error")).to_be_hidden()


# What the 3D view's canvas shows: how many pixels differ from its background colour.
DRAWN = """() => {
  const source = document.getElementById("viewer-canvas");
  const canvas = document.createElement("canvas");
  canvas.width = source.width;
  canvas.height = source.height;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(source, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  let sum = 0;
  for (let i = 0; i < data.length; i += 4) {
    const [r, g, b] = [data[i] - 0x2b, data[i + 1] - 0x2b, data[i + 2] - 0x2b];
    if (Math.abs(r) + Math.abs(g) + Math.abs(b) > 24) drawn += 1;
    sum += data[i] * 3 + data[i + 1] * 5 + data[i + 2] * 7;
  }
  return { drawn, total: data.length / 4, sum };
}"""


async def test_console_when_run_ends_shows_its_revision_in_an_orbitable_3d_view(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    async with console(browser, console_url, ANA, tmp_path, "3d-view") as page:
        await run(page, "solid", "add a cube named Left at -2 0 0")
        # The previews render a scene's newest revision: revision 1 has a model only if it
        # was rendered before revision 2 was committed, which a busy machine may not do.
        await page.wait_for_function(
            "() => window.blendmeshViewer?.current?.shown === 'solid@1'", timeout=30_000
        )
        await run(page, "solid", "add a sphere named Right at 2 0 0")
        heading = page.get_by_test_id("viewer-heading")
        await expect(heading).to_have_text("3D view of revision 2 of solid", timeout=30_000)
        await page.wait_for_function(
            "() => window.blendmeshViewer?.current?.shown === 'solid@2'", timeout=30_000
        )
        # The viewer's scene graph holds the revision's objects, by their Blender names.
        names = await page.evaluate("() => window.blendmeshViewer.current.meshNames()")
        assert sorted(names) == ["Left", "Right"], names
        await expect(page.get_by_test_id("viewer-caption")).to_contain_text("2 meshes")
        canvas = page.get_by_test_id("viewer-canvas")
        await canvas.scroll_into_view_if_needed()
        before = await page.evaluate(DRAWN)
        # Both objects are drawn: a good share of the canvas is not background.
        assert before["drawn"] > before["total"] * 0.02, before
        await snap(page, tmp_path, "3d-view-revision-2")
        await page.get_by_test_id("viewer").screenshot(path=str(tmp_path / "3d-view-canvas.png"))
        await page.get_by_test_id("compare").screenshot(path=str(tmp_path / "3d-compare.png"))

        await canvas.scroll_into_view_if_needed()
        box = await canvas.bounding_box()
        assert box is not None and box["width"] >= 900, box
        start = await page.evaluate(
            "() => window.blendmeshViewer.current.camera.position.toArray()"
        )
        middle_x, middle_y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        await page.mouse.move(middle_x, middle_y)
        await page.mouse.down()
        await page.mouse.move(middle_x + 250, middle_y + 40, steps=10)
        await page.mouse.up()
        moved = await page.evaluate(
            "() => window.blendmeshViewer.current.camera.position.toArray()"
        )
        assert moved != start  # orbited
        after = await page.evaluate(DRAWN)
        assert after["drawn"] > after["total"] * 0.02 and after["sum"] != before["sum"], after
        await page.get_by_test_id("viewer").screenshot(path=str(tmp_path / "3d-view-orbited.png"))
        target = "() => window.blendmeshViewer.current.controls.target.toArray()"
        centred = await page.evaluate(target)
        await canvas.focus()
        await page.keyboard.press("ArrowLeft")
        assert await page.evaluate(target) != centred  # panned from the keyboard

        # From the history, the first revision: one object.
        await page.get_by_test_id("scenes-refresh").click()
        await page.get_by_label("Pick a scene").select_option("solid")
        await page.get_by_role("button", name="3D view of solid revision 1").click()
        await page.wait_for_function(
            "() => window.blendmeshViewer.current.shown === 'solid@1'", timeout=30_000
        )
        names = await page.evaluate("() => window.blendmeshViewer.current.meshNames()")
        assert names == ["Left"], names
        # three.js and its loaders come from the gateway itself, never from another site.
        assert any(u.endswith("/static/vendor/three/three.module.min.js") for u in page.asked)
        elsewhere = [u for u in page.asked if not u.startswith((console_url, "blob:", "data:"))]
        assert elsewhere == []
        await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_revision_model_when_asked_by_another_user_is_404_like_a_missing_scene(
    console_url: str,
) -> None:
    made = await api_run(console_url, ANA, "owned", "add a cube named Mine")
    assert made["status"] == "completed", made
    path = "/api/scenes/owned/revisions/1/scene.glb"
    async with httpx.AsyncClient(base_url=console_url, timeout=30) as http:
        ana = {"Authorization": f"Bearer {ANA}"}
        for _ in range(120):  # exported off the run's path, a moment after it ends
            answer = await http.get(path, headers=ana)
            if answer.status_code != 404:
                break
            await asyncio.sleep(0.25)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "model/gltf-binary"
        assert answer.content[:4] == b"glTF"
        cli = {"Authorization": f"Bearer {CLI}"}
        for other in (path, "/api/scenes/owned/revisions/1/preview.png"):
            refused = await http.get(other, headers=cli)
            assert refused.status_code == 404, refused.text
            assert "owned" in refused.json()["error"]["message"]
        missing = await http.get("/api/scenes/owned/revisions/9/scene.glb", headers=ana)
        assert missing.status_code == 404
        # What a hostile caller tries next: no revision, a huge one, not a number, a wildcard.
        for bad in ("0", "-1", str(2**40), "one", "1.5"):
            for kind in ("scene.glb", "preview.png"):
                answer = await http.get(f"/api/scenes/owned/revisions/{bad}/{kind}", headers=ana)
                assert answer.status_code == 422, (bad, kind, answer.text)
        wildcard = await http.get("/api/scenes/*/revisions/1/scene.glb", headers=ana)
        assert wildcard.status_code in (404, 422), wildcard.text
        assert (await http.get("/api/me")).status_code == 401
        assert (await http.get("/api/me", headers=cli)).json() == {
            "user": "cli",
            "meshUser": "cli",
            "maxUploadBytes": 64 * 1024 * 1024,
        }


async def test_console_when_a_run_is_shown_lays_out_its_timeline(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    """Issue 42: the run's operations with arguments, decision, approver and receipt, its
    events in order, the revision it made and the versions that planned and executed it."""
    async with console(browser, console_url, ANA, tmp_path, "timeline") as page:
        made = await api_run(console_url, ANA, "timeline", "add a cube named Box")
        assert made["status"] == "completed", made
        waiting = await api_run(console_url, ANA, "timeline", "delete Box")
        assert waiting["status"] == "awaiting_confirmation", waiting
        card = page.get_by_test_id("approval").filter(has_text=waiting["runId"])
        await card.get_by_test_id("approve").click()
        row = page.get_by_test_id("run-row").filter(has_text=waiting["runId"])
        await expect(row.get_by_test_id("run-state")).to_have_text("completed", timeout=60_000)
        await row.get_by_test_id("show-run").click()

        section = page.get_by_test_id("timeline")
        await expect(section).to_be_visible(timeout=30_000)
        (op,) = await page.get_by_test_id("timeline-op").all()
        cells = [await c.inner_text() for c in await op.locator("td").all()]
        assert cells[:6] == [
            "op01", "object.delete", '{"name":"Box"}', "require_approval", "ana", "succeeded",
        ], cells  # fmt: skip
        assert float(cells[6]) > 0 and cells[7] != cells[8] != "-"
        events = page.get_by_test_id("timeline-event")
        await expect(events.first).to_contain_text(re.compile(r"\d\d:\d\d:\d\d\.\d{3}\s*requested"))
        await expect(events.last).to_contain_text("completed")
        await expect(events.filter(has_text="approval_resolved")).to_contain_text("ana chose")
        # The run came through the HTTP API (api_run), and is nobody's re-run.
        await expect(page.get_by_test_id("timeline-origin")).to_have_text("Asked through http.")
        versions = page.get_by_test_id("timeline-versions")
        await expect(versions).to_contain_text(
            re.compile(r"Planned by blendmesh \S+, tool catalog")
        )
        await expect(versions).to_contain_text(re.compile(r"executed by .*Blender \d"))
        revision = page.get_by_test_id("timeline-revision")
        await expect(revision).to_contain_text("It made revision 2.")
        await expect(revision).to_contain_text("gates passed on revision 2")
        await snap(page, tmp_path, "timeline-shown")
        await expect(page.get_by_test_id("error")).to_be_hidden()


async def test_console_when_changes_are_asked_shows_the_change_list_and_records_a_review(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    assert (await api_run(console_url, ANA, "diffed", "add a cube named First"))["status"] == (
        "completed"
    )
    made = await api_run(console_url, ANA, "diffed", "add a cube named Second at 2 0 0")
    assert made["status"] == "completed", made
    async with console(browser, console_url, ANA, tmp_path, "changes") as page:
        picker = page.get_by_label("Pick a scene")
        await expect(picker.locator("option", has_text="diffed")).to_have_count(1, timeout=30_000)
        await picker.select_option("diffed")
        rows = page.get_by_test_id("history-row")
        await expect(rows).to_have_count(2, timeout=30_000)
        await rows.first.get_by_test_id("changes").click()  # the newest first
        text = page.get_by_test_id("changes-text")
        await expect(text).to_contain_text("revision 2 against revision 1", timeout=30_000)
        await expect(text).to_contain_text("+ object Second added")
        await expect(text).to_contain_text("location: [2.0,0.0,0.0]")
        await page.get_by_label("Review").select_option("request_changes")
        await page.get_by_label("Note").fill("move it closer")
        await page.get_by_test_id("review-submit").click()
        await expect(text).to_contain_text("review: ana requested changes: move it closer")
        await expect(page.get_by_test_id("error")).to_be_hidden()
        await snap(page, tmp_path, "changes-reviewed")


async def test_console_when_a_rerun_is_shown_names_the_run_it_came_from(
    browser: Any, console_url: str, tmp_path: Path
) -> None:
    """ADR 0063: a re-run's timeline says which run and operation it re-ran from, and its
    operations the original committed show as idempotent no-ops."""
    async with console(browser, console_url, ANA, tmp_path, "rerun") as page:
        made = await api_run(console_url, ANA, "rerun", "add a cube named Once")
        assert made["status"] == "completed", made
        headers = {"Authorization": f"Bearer {ANA}"}
        async with httpx.AsyncClient(base_url=console_url, headers=headers, timeout=120) as http:
            again = await http.post(f"/api/runs/{made['runId']}/rerun", json={"fromOp": 1})
        assert again.status_code == 200 and again.json()["status"] == "completed", again.text
        rerun_id = again.json()["runId"]
        row = page.get_by_test_id("run-row").filter(has_text=rerun_id)
        await expect(row.get_by_test_id("run-state")).to_have_text("completed", timeout=60_000)
        await row.get_by_test_id("show-run").click()
        await expect(page.get_by_test_id("timeline-origin")).to_have_text(
            f"Asked through http. A rerun of run {made['runId']} from operation 1.",
            timeout=30_000,
        )
        (op,) = await page.get_by_test_id("timeline-op").all()
        await expect(op.locator("td").nth(5)).to_have_text("skipped_idempotent")
        await expect(page.get_by_test_id("error")).to_be_hidden()
