"""A push by changed chunks through the gateway on a real mesh (real nats-server, real
bpy): the add-on's cuts of a real .blend are asked for, sent, named in a manifest and
imported; every chunk is its user's alone, and every wrong manifest or batch is refused
saying what was wrong, with nothing staged."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from blendmesh_addon import chunks
from contracts.pushed_chunks import MAX_BATCH_BYTES, MAX_CHUNK_BYTES, MAX_CHUNKS, frames
from contracts.scene_files import blob_id
from services.doors.cli.mesh import Mesh
from services.executor.client import ObjectStoreUploads, PushedChunks, SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_gateway_scenes import approve, client_of, error, object_names, waiting
from tests.integration.test_scene_files import blend_with_cone
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
OCTETS = {"Content-Type": "application/octet-stream"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmpushchunks", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-pushed-chunks")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_of(mesh[0].settings, mesh[1]) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def cone(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = await blend_with_cone(None, tmp_path_factory.mktemp("blend") / "cone.blend")
    return path.read_bytes()


def manifest(cut: chunks.Cut) -> dict[str, Any]:
    return {
        "bytes": cut.size,
        "sha256": cut.sha256,
        "chunks": [{"sha256": c.sha256, "size": c.size} for c in cut.chunks],
    }


def pieces(data: bytes, cut: chunks.Cut) -> list[bytes]:
    return [data[c.offset : c.offset + c.size] for c in cut.chunks]


async def missing(api: httpx.AsyncClient, cut: chunks.Cut, who: dict[str, str]) -> list[str]:
    asked = {"chunks": [c.sha256 for c in cut.chunks]}
    answer = await api.post("/api/uploads/chunks/missing", json=asked, headers=who)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["missing"])


async def send(api: httpx.AsyncClient, parts: list[bytes], who: dict[str, str]) -> Any:
    answer = await api.post("/api/uploads/chunks", content=frames(parts), headers={**who, **OCTETS})
    assert answer.status_code == 201, answer.text
    return answer.json()


async def nothing_staged(mesh: tuple[Mesh, Bus], user: str, scene: str, data: bytes) -> None:
    assert await ObjectStoreUploads(mesh[1].js, mesh[1].prefix).get(user, blob_id(data)) is None
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head(scene) is None


async def test_push_by_chunks_when_every_chunk_is_sent_imports_the_file(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], cone: bytes
) -> None:
    cut = chunks.cut(cone)
    assert await missing(api, cut, ANA) == list(dict.fromkeys(c.sha256 for c in cut.chunks))
    sent = await send(api, pieces(cone, cut), ANA)
    assert sent == {"stored": [c.sha256 for c in cut.chunks], "bytes": len(cone)}
    assert await missing(api, cut, ANA) == []  # a second push of the same file sends nothing
    answer = await api.post("/api/scenes/pc_cone/import/chunks", json=manifest(cut), headers=ANA)
    assert answer.status_code == 200, answer.text  # a new scene of one's own: no approval
    assert answer.json()["run"]["status"] == "completed"
    # The same staged upload a whole body makes: the import cannot tell them apart.
    uploads = ObjectStoreUploads(mesh[1].js, mesh[1].prefix)
    assert await uploads.get("ana", blob_id(cone)) == cone
    assert "Cone" in await object_names(api, "pc_cone")
    # Over an existing scene, the import waits for a person, as /import's does.
    asked = waiting(
        await api.post("/api/scenes/pc_cone/import/chunks", json=manifest(cut), headers=ANA),
        "scene.import",
    )
    assert asked["approval"]["operations"][0]["args"] == {"blob": blob_id(cone), "bytes": len(cone)}
    assert (await approve(api, asked, "reject"))["status"] == "failed"


async def test_chunks_when_another_user_sent_them_are_missing_and_cannot_be_named(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    bens = (await blend_with_cone(None, tmp_path / "bens.blend", "BensCone")).read_bytes()
    cut = chunks.cut(bens)
    await send(api, pieces(bens, cut), BEN)
    assert await missing(api, cut, BEN) == []
    # Ana knows every hash of Ben's file: they are missing for her, and naming them fails.
    assert len(await missing(api, cut, ANA)) == len({c.sha256 for c in cut.chunks})
    refused = await api.post("/api/scenes/pc_stolen/import/chunks", json=manifest(cut), headers=ANA)
    said = error(refused, 409)
    assert f"{len(cut.chunks)} of the file's {len(cut.chunks)} chunks are not stored" in said
    assert "POST /api/uploads/chunks" in said
    await nothing_staged(mesh, "ana", "pc_stolen", bens)


async def test_import_chunks_when_a_chunk_is_missing_names_it_and_stages_nothing(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data = (await blend_with_cone(None, tmp_path / "part.blend", "PartCone")).read_bytes()
    half = len(data) // 2  # any cut will do: the manifest names what the add-on cut
    parts = [data[:half], data[half:]]
    named = [chunks.Chunk(hashlib.sha256(p).hexdigest(), 0, len(p)) for p in parts]
    cut = chunks.Cut(hashlib.sha256(data).hexdigest(), len(data), named)
    await send(api, parts[1:], ANA)
    refused = await api.post("/api/scenes/pc_part/import/chunks", json=manifest(cut), headers=ANA)
    assert f"(the first: {cut.chunks[0].sha256})" in error(refused, 409)
    await nothing_staged(mesh, "ana", "pc_part", data)


async def test_import_chunks_when_the_manifest_lies_is_refused_naming_what(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    cone = (await blend_with_cone(None, tmp_path / "lie.blend", "LieCone")).read_bytes()
    cut = chunks.cut(cone)
    await send(api, pieces(cone, cut), ANA)
    wrong_hash = {**manifest(cut), "sha256": "0" * 64}
    said = error(
        await api.post("/api/scenes/pc_lie/import/chunks", json=wrong_hash, headers=ANA), 422
    )
    assert f"not the {len(cone)} bytes and {'0' * 64} the manifest says" in said
    wrong_size = {**manifest(cut), "bytes": len(cone) + 1}
    said = error(
        await api.post("/api/scenes/pc_lie/import/chunks", json=wrong_size, headers=ANA), 422
    )
    assert f"add up to {len(cone)} bytes, not the {len(cone) + 1}" in said
    await nothing_staged(mesh, "ana", "pc_lie", cone)


async def test_import_chunks_when_over_the_upload_limit_is_refused_413(
    mesh: tuple[Mesh, Bus], cone: bytes
) -> None:
    settings = mesh[0].settings.with_(max_upload_bytes=4096)
    async with await client_of(settings, mesh[1]) as small:
        refused = await small.post(
            "/api/scenes/pc_big/import/chunks", json=manifest(chunks.cut(cone)), headers=ANA
        )
    assert "more than the 4096 an import takes" in error(refused, 413)


async def test_import_chunks_when_the_scene_is_another_users_answers_404(
    api: httpx.AsyncClient, cone: bytes
) -> None:
    cut = chunks.cut(cone)
    # ana's scene, made here: the suite's workers may run this test apart from the others.
    await send(api, pieces(cone, cut), ANA)
    made = await api.post("/api/scenes/pc_anas/import/chunks", json=manifest(cut), headers=ANA)
    assert made.status_code == 200 and made.json()["run"]["status"] == "completed", made.text
    await send(api, pieces(cone, cut), BEN)
    refused = await api.post("/api/scenes/pc_anas/import/chunks", json=manifest(cut), headers=BEN)
    assert refused.status_code == 404, refused.text


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"\x00\x00\x00\x05abc", "frame 1 says 5 bytes but the body ends 3 bytes into it"),
        (b"\x00\x00\x00\x00", "frame 1 says its chunk holds 0 bytes"),
        ((MAX_CHUNK_BYTES + 1).to_bytes(4, "big") + b"x", "a chunk holds 1 to"),
        (b"", "holds no chunk"),
    ],
    ids=["short", "zero", "over-chunk", "empty"],
)
async def test_batch_when_malformed_is_refused_naming_the_frame(
    api: httpx.AsyncClient, body: bytes, said: str
) -> None:
    refused = await api.post("/api/uploads/chunks", content=body, headers={**ANA, **OCTETS})
    assert said in error(refused, 422)


async def test_batch_when_over_its_limit_is_refused_413_before_it_is_read(
    api: httpx.AsyncClient,
) -> None:
    headers = {**ANA, **OCTETS, "Content-Length": str(MAX_BATCH_BYTES + 1)}
    refused = await api.post("/api/uploads/chunks", content=b"x", headers=headers)
    assert f"larger than {MAX_BATCH_BYTES} bytes" in error(refused, 413)
    body = frames([bytes(MAX_CHUNK_BYTES)] * (MAX_BATCH_BYTES // MAX_CHUNK_BYTES + 1))
    refused = await api.post("/api/uploads/chunks", content=body, headers={**ANA, **OCTETS})
    assert refused.status_code == 413, refused.text  # counted while it streams


@pytest.mark.parametrize(
    "asked",
    [
        {"chunks": []},
        {"chunks": ["../../ben/chunk-" + "0" * 48]},
        {"chunks": ["A" * 64]},
        {"chunks": ["0" * 64] * (MAX_CHUNKS + 1)},
        {"chunks": ["0" * 64], "also": 1},
    ],
    ids=["none", "path", "upper-case", "too-many", "unknown-field"],
)
async def test_missing_when_the_question_is_wrong_answers_422(
    api: httpx.AsyncClient, asked: dict[str, Any]
) -> None:
    refused = await api.post("/api/uploads/chunks/missing", json=asked, headers=ANA)
    assert refused.status_code == 422, refused.text


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/uploads/chunks/missing"),
        ("POST", "/api/uploads/chunks"),
        ("POST", "/api/scenes/pc_cone/import/chunks"),
    ],
)
@pytest.mark.parametrize("token", [None, "tok-nobody"])
async def test_chunk_routes_when_the_token_is_missing_or_unknown_answer_401(
    api: httpx.AsyncClient, method: str, path: str, token: str | None
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = frames([b"x"]) if path.endswith("/chunks") else b'{"chunks": []}'
    refused = await api.request(method, path, content=body, headers=headers)
    assert refused.status_code == 401, refused.text


async def test_missing_when_a_stored_chunk_is_past_half_its_keeping_asks_for_it_again(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], cone: bytes
) -> None:
    cut = chunks.cut(cone)
    await send(api, pieces(cone, cut), ANA)
    names = [c.sha256 for c in cut.chunks]
    kept_long = PushedChunks(mesh[1].js, mesh[1].prefix, kept=3600.0)
    assert await kept_long.missing("ana", names) == []
    # Kept a second (BLENDMESH_UPLOAD_TTL=1): a copy older than half of it may be gone
    # before the import names it, so it is sent again.
    await asyncio.sleep(0.6)
    kept_briefly = PushedChunks(mesh[1].js, mesh[1].prefix, kept=1.0)
    assert await kept_briefly.missing("ana", names) == list(dict.fromkeys(names))
