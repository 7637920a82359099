"""A big .blend imported through the HTTP gateway (uvicorn serving on a real socket, a real
mesh): its body goes to a temporary file as it arrives and is staged from there, so the
gateway's memory holds a buffer of it, not the file; the staged object reads back byte
for byte through the executor's own fetch. Over the limit, not a .blend, or cut off by
the client, an upload is refused or dropped without a temporary file left open or an
object staged."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.doors.gateway import received
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.executor.client import ObjectStoreUploads, SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

MIB = 1024 * 1024
TOKEN = {"Authorization": "Bearer tok-ana"}
ANA = {**TOKEN, "Content-Type": "application/octet-stream"}
HEADER = b"BLENDER-v405RENDH"  # what the door's check needs to see: an uncompressed .blend
BIG = 128 * MIB  # the upload whose staging is measured
LIMIT = 160 * MIB  # the mesh's BLENDMESH_MAX_UPLOAD_BYTES here
SMALL_LIMIT = 2 * MIB  # a second gateway's, for the refusals
PIECE = 64 * 1024  # what a client sends at a time
# The gateway's own peak while it stages BIG: a write buffer, a chunk being published and
# what the server, the client and the bus hold meanwhile. Holding the body (and copying it
# into bytes for the door) is two BIG.
MEMORY_BOUND = 24 * MIB


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=home, prefix="bmstreamed", user="ana", max_upload_bytes=LIMIT, previews=False
    )


mesh = mesh_fixture(client="test-streamed-imports")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def served(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    """The gateway's address: uvicorn serving it in this process, on a free port."""
    app = create_app(mesh[0].settings, mesh[1], Tokens({"tok-ana": "ana"}), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def small_api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway with an upload limit of SMALL_LIMIT, asked in process: the app pulls each
    piece of a body from the client, so a test sees how much of it was read."""
    settings = mesh[0].settings.with_(max_upload_bytes=SMALL_LIMIT)
    app = create_app(settings, mesh[1], Tokens({"tok-ana": "ana"}), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def pieces(size: int, seed: int) -> Iterator[bytes]:
    """A .blend header, then filler no two runs of which are alike (a chunk out of place
    changes the digest), ``size`` bytes in all, PIECE at a time."""
    rng = random.Random(seed)
    yield HEADER
    sent = len(HEADER)
    while sent < size:
        piece = rng.randbytes(min(PIECE, size - sent))
        sent += len(piece)
        yield piece


def digest(size: int, seed: int) -> str:
    hasher = hashlib.sha256()
    for piece in pieces(size, seed):
        hasher.update(piece)
    return f"sha256:{hasher.hexdigest()}"


class Counted:
    """A request body sent PIECE at a time, counting the bytes the server asked for."""

    def __init__(self, body: Iterator[bytes]) -> None:
        self.body = body
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.body:
            self.sent += len(piece)
            yield piece


def open_uploads(settings: Settings) -> list[str]:
    """The files of this process open in the uploads folder (unnamed ones included)."""
    where = str(received.folder(settings))
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed while listed
        if target.startswith(where):
            found.append(target)
    return found


def left_behind(settings: Settings) -> list[str]:
    """Temporary uploads still open or still named in the folder: none, once a request ended."""
    where = received.folder(settings)
    named = sorted(p.name for p in where.iterdir()) if where.exists() else []
    return named + open_uploads(settings)


async def stored_messages(mesh: tuple[Mesh, Bus]) -> int:
    """The messages of the uploads' store: chunks and metas of every staged object. A probe
    is staged first, so the store exists; staged again it replaces itself (its meta rolls
    up, its old chunks are purged), so the count grows only by what else was staged."""
    uploads = ObjectStoreUploads(mesh[1].js, mesh[1].prefix)
    await uploads.stage("ana", b"BLENDER-v405 so the store exists")
    return (await mesh[1].js.stream_info(f"OBJ_{uploads.bucket}")).state.messages


async def added(url: str, scene: str) -> None:
    """A revision for ``scene``, so an import of it waits for a person's approval."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        body = {"prompt": "add a cube named Box at 0 0 1", "sceneId": scene}
        answer = await http.post("/api/agent/run", json=body, headers=TOKEN)
    assert answer.status_code == 200 and answer.json()["status"] == "completed", answer.text


async def test_import_when_big_stages_from_a_file_within_bounded_memory(
    served: str, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    await added(served, "st_big")
    tracemalloc.start()
    try:
        async with httpx.AsyncClient(base_url=served, timeout=300) as http:
            body = Counted(pieces(BIG, seed=24))
            response = await http.post("/api/scenes/st_big/import", content=body, headers=ANA)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert response.status_code == 202, response.text
    assert body.sent == BIG
    assert peak < MEMORY_BOUND, f"the gateway peaked at {peak / MIB:.0f} MiB staging the upload"
    args = response.json()["approval"]["operations"][0]["args"]
    assert args == {"blob": digest(BIG, seed=24), "bytes": BIG}
    assert left_behind(mesh[0].settings) == []

    # What the executor reads: the same bytes, by its own fetch a batch at a time.
    uploads = ObjectStoreUploads(mesh[1].js, mesh[1].prefix)
    copy = tmp_path / "fetched.blend"
    with copy.open("wb") as dest:
        assert await uploads.fetch("ana", args["blob"], dest, max_bytes=BIG)
    with copy.open("rb") as got:
        assert f"sha256:{hashlib.file_digest(got, 'sha256').hexdigest()}" == args["blob"]
    assert copy.stat().st_size == BIG


async def test_import_when_over_the_limit_is_refused_before_the_rest_is_read(
    small_api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    before = await stored_messages(mesh)
    body = Counted(pieces(4 * SMALL_LIMIT, seed=1))  # chunked: no Content-Length to refuse
    response = await small_api.post("/api/scenes/st_over/import", content=body, headers=ANA)
    assert response.status_code == 413, response.text
    message = response.json()["error"]["message"]
    assert message == (
        f"the .blend to import is larger than {SMALL_LIMIT} bytes, the most this gateway "
        "takes (BLENDMESH_MAX_UPLOAD_BYTES); send a smaller one or raise the limit"
    )
    assert body.sent <= SMALL_LIMIT + PIECE  # stopped at the piece that passed the limit
    assert left_behind(mesh[0].settings) == []
    assert await stored_messages(mesh) == before
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("st_over") is None


async def test_import_when_not_a_blend_is_refused_on_its_first_bytes(
    small_api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    before = await stored_messages(mesh)
    text = (b"hello, this is a long text and no .blend " * 60000)[: SMALL_LIMIT - 1]
    body = Counted(text[at : at + PIECE] for at in range(0, len(text), PIECE))
    response = await small_api.post("/api/scenes/st_text/import", content=body, headers=ANA)
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert message.startswith("the uploaded file is not a .blend file (it does not start with")
    assert "File > Save" in message
    assert body.sent < len(text)  # the head told: the rest was never read
    assert left_behind(mesh[0].settings) == []
    assert await stored_messages(mesh) == before
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("st_text") is None


async def test_import_when_the_client_hangs_up_midway_leaves_no_file_or_object(
    served: str, mesh: tuple[Mesh, Bus]
) -> None:
    settings = mesh[0].settings
    before = await stored_messages(mesh)
    host, port = served.removeprefix("http://").split(":")
    _, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        (
            "POST /api/scenes/st_cut/import HTTP/1.1\r\n"
            f"Host: {host}\r\nAuthorization: Bearer tok-ana\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {64 * MIB}\r\n\r\n"
        ).encode()
    )
    try:
        for piece in pieces(4 * MIB, seed=7):
            writer.write(piece)
        await writer.drain()
        # The gateway has the upload's file open while the body arrives...
        for _ in range(200):
            if open_uploads(settings):
                break
            await asyncio.sleep(0.05)
        assert open_uploads(settings), "the gateway never opened a file for the upload"
    finally:
        writer.close()  # ...and the client goes away with 60 MiB unsent
        await writer.wait_closed()
    for _ in range(200):
        if not left_behind(settings):
            break
        await asyncio.sleep(0.05)
    assert left_behind(settings) == []
    assert await stored_messages(mesh) == before
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("st_cut") is None
