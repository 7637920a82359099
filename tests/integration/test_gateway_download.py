"""``GET /api/scenes/{id}.blend`` streamed by the real gateway (uvicorn on a real
nats-server): byte for byte, a damaged or missing chunk ending the body short of its
Content-Length, and the gateway's memory bounded while a large revision goes out."""

from __future__ import annotations

import gc
import hashlib
import json
import logging
import random
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from contracts import revisions
from contracts.revisions import chunk_name
from contracts.scenes import Head
from services.doors.core import revision_reader
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.executor.adapters.scene_store import MAX_MANIFEST_BYTES, JetStreamSceneStore
from services.runtime.nats.objects import put_object
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

ANA = {"Authorization": "Bearer tok-ana"}
MIB = 1024 * 1024


def scene_bytes(seed: int, size: int) -> bytes:
    """Bytes like an uncompressed .blend: a header, then varied but repeatable bytes that
    compress about as well as a scene's (the chunk store may compress what it keeps)."""
    return b"BLENDER-v500" + random.Random(seed).randbytes(size // 2).hex().encode()


async def committed(bus: Bus, tmp_path: Path, scene: str, data: bytes) -> Head:
    """``data`` as revision 1 of ``scene``, owned by ana."""
    path = tmp_path / f"{scene}.blend"
    path.write_bytes(data)
    store = JetStreamSceneStore(bus.js, bus.prefix)
    return await store.commit(scene, path, hashlib.sha256(data).hexdigest(), None, 1, "ana")


async def manifest_of(bus: Bus, head: Head) -> revisions.ChunkedRevision:
    found = await JetStreamSceneStore(bus.js, bus.prefix).manifest(head.object_name)
    assert found is not None and len(found.chunks) > 3 * revision_reader.WINDOW
    return found


@pytest_asyncio.fixture
async def gateway(bus: Bus, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway served by uvicorn on a free port, and a client of it."""
    app = create_app(settings.with_(prefix=bus.prefix), bus, Tokens({"tok-ana": "ana"}))
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            yield client
    finally:
        await server.stop()


async def received(client: httpx.AsyncClient, scene: str) -> tuple[httpx.Response, bytes]:
    async with client.stream("GET", f"/api/scenes/{scene}.blend", headers=ANA) as response:
        body = b"".join([piece async for piece in response.aiter_raw()])
    return response, body


async def test_download_when_revision_is_chunked_streams_it_byte_for_byte(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    data = scene_bytes(1, 6 * MIB)
    head = await committed(bus, tmp_path, "big", data)
    await manifest_of(bus, head)  # many windows of chunks, not one
    response, body = await received(gateway, "big")
    assert response.status_code == 200
    assert body == data
    assert response.headers["content-length"] == str(len(data))
    assert response.headers["etag"] == f'"{head.scene_hash}"'
    assert response.headers["content-disposition"] == 'attachment; filename="big.blend"'
    assert "transfer-encoding" not in response.headers


async def test_download_when_revision_is_stored_whole_sends_it_with_its_length(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    data = scene_bytes(2, 200_000)  # under the size a revision is cut into chunks
    await committed(bus, tmp_path, "small", data)
    response, body = await received(gateway, "small")
    assert response.status_code == 200 and body == data
    assert response.headers["content-length"] == str(len(data))


@pytest.mark.parametrize("damage", ["rewritten", "deleted"])
async def test_download_when_a_chunk_midway_is_damaged_ends_short_and_logs_it(
    bus: Bus,
    tmp_path: Path,
    gateway: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    damage: str,
) -> None:
    data = scene_bytes(3, 6 * MIB)
    head = await committed(bus, tmp_path, "torn", data)
    manifest = await manifest_of(bus, head)
    store = JetStreamSceneStore(bus.js, bus.prefix)
    at = 2 * revision_reader.WINDOW + 1  # sent after two windows went out whole
    digest = manifest.chunks[at][0]
    if damage == "rewritten":
        await put_object(bus.js, store.chunks.bucket, chunk_name("ana", digest), b"not it")
    else:
        objects = await bus.js.object_store(store.chunks.bucket)
        await objects.delete(chunk_name("ana", digest))
    sent_before = sum(size for _, size in manifest.chunks[:at])
    caplog.set_level(logging.ERROR, logger="blendmesh.gateway")
    got = bytearray()
    with pytest.raises(httpx.RemoteProtocolError):
        async with gateway.stream("GET", "/api/scenes/torn.blend", headers=ANA) as response:
            assert response.status_code == 200
            assert response.headers["content-length"] == str(len(data))
            async for piece in response.aiter_raw():
                got += piece
    assert len(got) <= sent_before < len(data)
    assert data.startswith(bytes(got))  # what came is the file's, up to the bad chunk
    assert "download of revision 1 of scene torn stopped short" in caplog.text
    assert digest[:16] in caplog.text


async def test_download_when_the_first_chunk_is_damaged_answers_an_error_before_any_byte(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    data = scene_bytes(4, 2 * MIB)
    head = await committed(bus, tmp_path, "bad", data)
    manifest = await JetStreamSceneStore(bus.js, bus.prefix).manifest(head.object_name)
    assert manifest is not None
    bucket = JetStreamSceneStore(bus.js, bus.prefix).chunks.bucket
    await put_object(bus.js, bucket, chunk_name("ana", manifest.chunks[0][0]), b"not it")
    response, body = await received(gateway, "bad")
    assert response.status_code == 500
    assert json.loads(body)["error"]["message"] == "the gateway failed; see its log"


async def test_download_when_manifest_misstates_the_file_withholds_the_last_bytes(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    """Every chunk verifies, but they are not the file the manifest recorded: the body
    stops before its last piece, so no client takes it for the whole file."""
    data = scene_bytes(5, 6 * MIB)
    head = await committed(bus, tmp_path, "lies", data)
    manifest = await manifest_of(bus, head)
    wrong = revisions.DIGEST_PREFIX + "0" * 64
    forged = revisions.encode(
        revisions.ChunkedRevision(
            space=manifest.space, size=manifest.size, digest=wrong, chunks=manifest.chunks
        )
    )
    await put_object(bus.js, f"{bus.prefix}_scenes", head.object_name, forged)
    got = bytearray()
    with pytest.raises(httpx.RemoteProtocolError):
        async with gateway.stream("GET", "/api/scenes/lies.blend", headers=ANA) as response:
            assert response.status_code == 200
            async for piece in response.aiter_raw():
                got += piece
    assert len(got) <= len(data) - manifest.chunks[-1][1]


async def test_download_when_revision_is_large_holds_a_few_windows_not_the_file(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    """The gateway and its client share this process: the peak of Python's allocations
    while 64 MiB go out stays far below the file (a whole-file read holds it twice)."""
    size = 64 * MIB
    data = scene_bytes(6, size)
    digest = hashlib.sha256(data).hexdigest()
    await committed(bus, tmp_path, "huge", data)
    del data
    gc.collect()
    tracemalloc.start()
    try:
        hasher, length = hashlib.sha256(), 0
        async with gateway.stream("GET", "/api/scenes/huge.blend", headers=ANA) as response:
            assert response.status_code == 200
            async for piece in response.aiter_raw():
                hasher.update(piece)
                length += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert length == size + len(b"BLENDER-v500") and hasher.hexdigest() == digest
    assert peak < 24 * MIB, f"the download's peak was {peak / MIB:.1f} MiB"


async def test_download_when_a_whole_revision_is_larger_than_any_manifest_sends_it(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient
) -> None:
    """A revision stored whole before chunks can be larger than a manifest may be: it is
    read as the whole file it is, not refused as a manifest too large."""
    head = await committed(bus, tmp_path, "old", scene_bytes(7, 100_000))
    legacy = scene_bytes(8, MAX_MANIFEST_BYTES + MIB)
    await put_object(bus.js, f"{bus.prefix}_scenes", head.object_name, legacy)
    response, body = await received(gateway, "old")
    assert response.status_code == 200 and body == legacy
    assert response.headers["content-length"] == str(len(legacy))


async def test_download_when_the_client_leaves_midway_stops_quietly_and_serves_on(
    bus: Bus, tmp_path: Path, gateway: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    data = scene_bytes(9, 6 * MIB)
    await committed(bus, tmp_path, "left", data)
    caplog.set_level(logging.ERROR, logger="blendmesh.gateway")
    async with gateway.stream("GET", "/api/scenes/left.blend", headers=ANA) as response:
        async for _ in response.aiter_raw():
            break  # the client closes the connection with most of the body unread
    response, body = await received(gateway, "left")
    assert response.status_code == 200 and body == data
    assert "stopped short" not in caplog.text
