"""A push by changed chunks (``contracts/pushed_chunks.py``): the Blender add-on sends
only the parts of its saved file the user's store lacks, then names the file by its
chunks, which the gateway assembles into the import a whole upload makes.

- ``POST /api/uploads/chunks/missing``: which of these chunks do I have to send?
- ``POST /api/uploads/chunks``: a batch of chunks, each named by the hash of its bytes.
- ``POST /api/scenes/{sceneId}/import/chunks``: the file as its chunks in order, its size
  and SHA-256; assembled, checked chunk by chunk and whole, then imported like
  ``/import``'s body (the run waits for approval).

Every chunk is the caller's alone: another user's chunk counts as missing and cannot be
named in a file, so neither its bytes nor its existence can be learned.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from contracts.pushed_chunks import (
    CHUNK_PATTERN,
    MAX_BATCH_BYTES,
    MAX_CHUNK_BYTES,
    MAX_CHUNKS,
    BadBatch,
    manifest_problem,
    unframe,
)
from services.doors.core.scene_client import SceneDoor
from services.doors.gateway import received
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import Conflict, TooLarge, ValidationError, responses
from services.doors.gateway.limits import Streamed
from services.doors.gateway.scene_runs import ANSWERS, UPLOAD_NAME, SceneId, follow
from services.doors.gateway.scene_schemas import SceneRun
from services.executor.client import PushedChunks, SceneFiles

router = APIRouter(tags=["uploads"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
BATCH_PATH = re.compile(r"/api/uploads/chunks")
Name = Annotated[str, Field(pattern=CHUNK_PATTERN, description="A chunk's SHA-256, hex")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChunkQuestion(_Model):
    chunks: list[Name] = Field(min_length=1, max_length=MAX_CHUNKS)


class MissingChunks(_Model):
    missing: list[Name] = Field(description="The asked chunks to send, in the asked order")


class StoredChunks(_Model):
    stored: list[Name] = Field(description="Each chunk of the batch, named by its bytes' hash")
    bytes: int


class ChunkRef(_Model):
    sha256: Name
    size: int = Field(ge=1, le=MAX_CHUNK_BYTES)


class ChunkManifest(_Model):
    """A .blend as its chunks in file order, each sent before (or present)."""

    bytes: int = Field(ge=1, description="The whole file's size")
    sha256: Name
    chunks: list[ChunkRef] = Field(min_length=1, max_length=MAX_CHUNKS)


def batch_limit() -> Streamed:
    """The batch route's exemption from the body limit, with a limit of its own."""
    return Streamed(
        method="POST",
        path=BATCH_PATH,
        max_bytes=MAX_BATCH_BYTES,
        setting="contracts/pushed_chunks.py MAX_BATCH_BYTES",
        what="the batch of chunks",
    )


@router.post(
    "/api/uploads/chunks/missing",
    response_model=MissingChunks,
    responses=responses(400, 401, 422, 503),
)
async def missing(body: ChunkQuestion, user: User, gw: Gw) -> MissingChunks:
    """Which of ``chunks`` the caller must send: those not stored for them lately."""
    chunks = PushedChunks(gw.bus.js, gw.prefix, gw.settings.upload_ttl)
    lacking = await chunks.missing(user, body.chunks)
    return MissingChunks(missing=lacking)


@router.post(
    "/api/uploads/chunks",
    status_code=201,
    response_model=StoredChunks,
    responses=responses(401, 413, 422, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": (
                "Frames, each a chunk's length (4 bytes, big-endian, 1 to "
                f"{MAX_CHUNK_BYTES}) and then its bytes; at most {MAX_BATCH_BYTES} bytes"
            ),
            "content": {
                "application/octet-stream": {
                    "schema": {"type": "string", "format": "binary", "minLength": 5}
                }
            },
        }
    },
)
async def store(request: Request, user: User, gw: Gw) -> StoredChunks:
    """Keep each chunk of the batch for the caller, named by its bytes' SHA-256."""
    body = bytearray()
    async for piece in request.stream():  # bounded while it arrives: batch_limit
        body += piece
    try:
        chunks = unframe(body)
    except BadBatch as exc:
        raise ValidationError(str(exc)) from None
    names = await PushedChunks(gw.bus.js, gw.prefix).store(user, chunks)
    return StoredChunks(stored=names, bytes=sum(len(c) for c in chunks))


@router.post(
    "/api/scenes/{sceneId}/import/chunks",
    status_code=202,
    response_model=SceneRun,
    responses={**ANSWERS, **responses(400, 401, 404, 409, 413, 422, 503, 504)},
)
async def import_chunks(
    scene_id: SceneId, body: ChunkManifest, response: Response, user: User, gw: Gw
) -> SceneRun:
    """Make the file the chunks spell the scene's next revision, as ``/import`` does with
    a body; 409 names the chunks to send first."""
    if await SceneFiles(gw.bus.js, gw.prefix).head(scene_id) is not None:
        await gw.own_scene(scene_id, user)
    limit = gw.settings.max_upload_bytes
    problem = manifest_problem([c.size for c in body.chunks], body.bytes, limit)
    if problem is not None:
        raise (TooLarge if body.bytes > limit else ValidationError)(problem)
    names = [c.sha256 for c in body.chunks]
    async with received.scratch(received.folder(gw.settings)) as file:
        got = await PushedChunks(gw.bus.js, gw.prefix, gw.settings.upload_ttl).assemble(
            user, names, file
        )
        if got.lacking:
            raise Conflict(
                f"{len(got.lacking)} of the file's {len(names)} chunks are not stored for "
                f"you (the first: {got.lacking[0]}); send them with POST "
                "/api/uploads/chunks (POST /api/uploads/chunks/missing names them), then "
                "import again"
            )
        if got.size != body.bytes or got.sha256.hex() != body.sha256:
            raise ValidationError(
                f"the chunks make a file of {got.size} bytes with SHA-256 "
                f"{got.sha256.hex()}, not the {body.bytes} bytes and {body.sha256} the "
                "manifest says; cut the file again and import again"
            )
        await asyncio.to_thread(file.seek, 0)
        built = await SceneDoor(gw.bus, gw.settings).import_request(
            user, scene_id, file, UPLOAD_NAME, sha256=got.sha256
        )
    return await follow(gw, built, response)
