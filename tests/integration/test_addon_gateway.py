"""The add-on's HTTP client (standard library only, so it runs here without Blender)
against a real gateway on a real port and a real log: it lists trusted Python with its
code, approves quoting the code's hash, and turns refusals into sentences."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from blendmesh_addon import chunks
from blendmesh_addon.chunks import cut
from blendmesh_addon.gateway import Gateway, GatewayError
from contracts.python_steps import code_sha256
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.trusted_runs import CODE, audit_mesh_fixtures, resolutions, waiting_run
from tests.unit.contracts.test_pushed_chunks import blend, scene

pytestmark = [pytest.mark.asyncio(loop_scope="module")]

mesh, policy_bus = audit_mesh_fixtures()


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmaddongw", user="ana", previews=False
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    # No policy runs here: a resolution is published, and its answer times out.
    tokens = Tokens({"tok-ana": "ana", "tok-ben": "ben"})
    server = GatewayServer(create_app(mesh[0].settings, mesh[1], tokens, run_timeout=1.0), port=0)
    try:
        yield await server.start()
    finally:
        await server.stop()


async def pending_of(gw: Gateway, run_id: str) -> dict[str, object]:
    for _ in range(100):  # the audit views list the run a moment after the log has it
        found = [a for a in await asyncio.to_thread(gw.pending) if a["runId"] == run_id]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_id} is not pending")


async def test_resolve_when_trusted_python_waits_approves_quoting_its_hash(
    mesh: tuple[Mesh, Bus], policy_bus: Bus, url: str
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    gw = Gateway(url, "tok-ana")
    approval = await pending_of(gw, run_id)
    assert approval["codeSha256"] == [code_sha256(CODE)]
    with pytest.raises(GatewayError, match=r"HTTP 504") as caught:
        await asyncio.to_thread(gw.resolve, approval, "approve_once")
    assert caught.value.status == 504
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "approve_once"
    assert resolution.code_sha256 == [code_sha256(CODE)] and resolution.user == "ana"


async def test_pending_when_another_user_asks_lists_none_of_anas(
    mesh: tuple[Mesh, Bus], policy_bus: Bus, url: str
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    await pending_of(Gateway(url, "tok-ana"), run_id)
    assert await asyncio.to_thread(Gateway(url, "tok-ben").pending) == []


async def test_calls_when_token_is_wrong_say_to_fix_it_in_preferences(url: str) -> None:
    with pytest.raises(GatewayError, match="refused the token") as caught:
        await asyncio.to_thread(Gateway(url, "tok-nobody").me)
    assert caught.value.status == 401 and "tok-nobody" not in str(caught.value)


async def test_calls_when_scene_is_unknown_answer_the_gateways_own_404(url: str) -> None:
    with pytest.raises(GatewayError, match=r"HTTP 404") as caught:
        await asyncio.to_thread(Gateway(url, "tok-ana").blend, "nowhere")
    assert "nowhere" in str(caught.value)


async def test_calls_when_gateway_is_down_say_how_to_start_it(unused_tcp_port: int) -> None:
    down = f"http://127.0.0.1:{unused_tcp_port}"
    with pytest.raises(GatewayError, match="cannot reach the blendmesh gateway") as caught:
        await asyncio.to_thread(Gateway(down, "tok-ana", timeout=5).me)
    assert "blendmesh up" in str(caught.value) and caught.value.status is None


BIG = b"B" * (9 * 1024 * 1024)  # past what the gateway takes here, past one TCP window


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def small_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    """A gateway that takes bodies of 8 MiB at most."""
    settings = mesh[0].settings
    small = Settings(
        home=settings.home, prefix=settings.prefix, user="ana", previews=False,
        max_upload_bytes=8 * 1024 * 1024,
    )  # fmt: skip
    tokens = Tokens({"tok-ana": "ana"})
    server = GatewayServer(create_app(small, mesh[1], tokens, run_timeout=1.0), port=0)
    try:
        yield await server.start()
    finally:
        await server.stop()


async def test_push_when_token_is_wrong_names_the_token_not_the_network(small_url: str) -> None:
    # The gateway refuses before it reads the body and closes the connection mid-send:
    # this once read "cannot reach the gateway ... start it with `blendmesh up`".
    with pytest.raises(GatewayError, match="refused the token") as caught:
        await asyncio.to_thread(Gateway(small_url, "tok-nobody").import_blend, "big", BIG)
    assert caught.value.status == 401


async def test_push_when_file_is_over_the_gateways_limit_says_so_before_sending(
    small_url: str,
) -> None:
    with pytest.raises(GatewayError, match=r"more than the 8\.0 MiB") as caught:
        await asyncio.to_thread(Gateway(small_url, "tok-ana").import_blend, "big", BIG)
    assert caught.value.status == 413 and "BLENDMESH_MAX_UPLOAD_BYTES" in str(caught.value)
    assert "9.0 MiB" in str(caught.value)


async def test_push_when_one_block_changed_sends_only_its_chunk(url: str) -> None:
    blocks = scene(5, 4000)
    first = blend(blocks)
    gw = Gateway(url, "tok-ana")
    with pytest.raises(GatewayError, match=r"HTTP 504"):  # no policy runs here
        await asyncio.to_thread(gw.import_blend, "chunked", first)
    assert len(first) < gw.sent < len(first) * 1.01  # every chunk, framed, and the manifest
    assert await asyncio.to_thread(gw._missing, cut(first)) == set()
    blocks[2000] = bytes(len(blocks[2000]))
    second = blend(blocks)
    with pytest.raises(GatewayError, match=r"HTTP 504"):
        await asyncio.to_thread(gw.import_blend, "chunked", second)
    had = {c.sha256 for c in cut(first).chunks}
    moved = sum(c.size for c in cut(second).chunks if c.sha256 not in had)
    asked = 200 * len(cut(second).chunks)  # the question and the manifest, per chunk
    assert 0 < moved <= chunks.MAXIMUM
    assert moved < gw.sent < moved + asked
    assert await asyncio.to_thread(Gateway(url, "tok-ben")._missing, cut(second)) == {
        c.sha256 for c in cut(second).chunks
    }  # another user has none of them
