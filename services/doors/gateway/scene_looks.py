"""``GET /api/scenes/{sceneId}/objects/{name}`` (one object in depth), ``/view.png`` (a
view from a chosen angle or camera) and ``POST /api/scenes/{sceneId}/assets`` (an asset
file into a collection).

Each is a run of one operation built by the doors' shared ``services/doors/core/scene_looks.py``, so
policy decides it and the audit records it like any run. The two reads make no revision;
the import makes one. The import's body is the file itself, streamed in up to
BLENDMESH_MAX_UPLOAD_BYTES (``asset_limit``), as a .blend import's is.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict

from contracts.assets import COLLECTION_PATTERN, EXTENSIONS
from contracts.events import RunRequested
from contracts.receipts import RunResult
from contracts.views import (
    DEFAULT_AZIMUTH,
    DEFAULT_ELEVATION,
    DEFAULT_SHADING,
    MAX_SIDE,
    MIN_SIDE,
    Shading,
)
from services.doors.core.scene_client import SceneDoor
from services.doors.core.scene_looks import AssetRefused, BadView, SceneLooks, operation_result
from services.doors.gateway.agent import followed, settled
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, ToolExecutionError, ValidationError, responses
from services.doors.gateway.limits import Streamed
from services.doors.gateway.scene_runs import follow
from services.doors.gateway.scene_schemas import SceneRun
from services.doors.gateway.schemas import RunResponse, run_response
from services.runtime.service.settings import Settings

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
ASSET_PATH = re.compile(r"/api/scenes/[A-Za-z0-9_-]{1,128}/assets")
Side = Annotated[int, Query(ge=MIN_SIDE, le=MAX_SIDE)]
# A name ending as contracts.assets.EXTENSIONS say, in any case (a test holds them equal).
FILENAME_PATTERN = (
    r"^.*\.([gG][lL][tT][fF]|[gG][lL][bB]|[fF][bB][xX]|"
    r"[oO][bB][jJ]|[uU][sS][dD][aA]?|[sS][tT][lL])$"
)


class ObjectAnswer(BaseModel):
    """The run that read the object, and what it read (``contracts.views.ObjectDetail``)."""

    model_config = ConfigDict(extra="forbid")
    run: RunResponse
    object: dict[str, Any]


def asset_limit(settings: Settings) -> Streamed:
    """The asset route's exemption from the body limit, with the upload limit instead."""
    return Streamed(
        method="POST",
        path=ASSET_PATH,
        max_bytes=settings.max_upload_bytes,
        setting="BLENDMESH_MAX_UPLOAD_BYTES",
        what="the asset file to import",
    )


def camel(detail: dict[str, Any]) -> dict[str, Any]:
    """``contracts.views.ObjectDetail`` in the API's camelCase (spec 002). The names inside
    ``settings`` and ``customProperties`` are Blender's and the artist's: kept as they are."""

    def key(name: str) -> str:
        head, *rest = name.split("_")
        return head + "".join(part.title() for part in rest)

    def walk(value: Any, keep: bool) -> Any:
        if isinstance(value, dict):
            return {k if keep else key(k): walk(v, k in _VERBATIM) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, False) for v in value]
        return value

    converted: dict[str, Any] = walk(detail, False)
    return converted


_VERBATIM = frozenset({"settings", "custom_properties"})


def _looks(gw: Gateway) -> SceneLooks:
    return SceneLooks(SceneDoor(gw.bus, gw.settings))


def refusal(result: RunResult) -> Exception:
    """A read that did not complete, as the error its receipt names."""
    failed = next((r for r in result.receipts if r.error_code), None)
    message = failed.message if failed else result.message or result.status
    if failed is not None and failed.error_code == "not_found":
        return NotFound(message)
    if failed is not None and failed.error_code == "invalid_input":
        return ValidationError(message)
    return ToolExecutionError(f"run {result.run_id} ended {result.status}: {message}")


async def _ran(gw: Gateway, request: RunRequested) -> tuple[RunResult, RunResponse]:
    """Submit ``request`` and wait for its answer: the result, and the run as the API
    answers runs (mesh trouble is 503 or 504, as ``settled`` maps it)."""
    view = await settled(gw, followed(gw, request), request.run_id)
    return view.result, run_response(view)


async def _read(
    gw: Gateway, request: RunRequested
) -> tuple[RunResult, RunResponse, dict[str, Any]]:
    result, response = await _ran(gw, request)
    found = operation_result(result)
    if result.status != "completed" or found is None:
        raise refusal(result)
    return result, response, found


@router.get(
    "/{sceneId}/objects/{name}",
    response_model=ObjectAnswer,
    responses=responses(401, 404, 422, 502, 503, 504),
)
async def inspect_object(
    scene_id: SceneId,
    name: Annotated[str, Path(min_length=1, max_length=63)],
    user: User,
    gw: Gw,
) -> ObjectAnswer:
    """One object of the caller's scene in depth: mesh counts, modifiers with their
    settings, materials, custom properties, world bounds, parent, children, collections.
    A read: a run of one operation, audited, that makes no revision."""
    request = await _looks(gw).inspect_request(user, scene_id, name)
    _, response, found = await _read(gw, request)
    return ObjectAnswer(run=response, object=camel(found))


_PNG: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The view as a PNG; X-Blendmesh-Run names the run that drew it",
        "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
    },
    **responses(401, 404, 422, 502, 503, 504),
}


async def _view(
    gw: Gateway,
    user: str,
    scene_id: str,
    width: int,
    height: int,
    azimuth: float | None = None,
    elevation: float | None = None,
    camera: str | None = None,
    shading: Shading = DEFAULT_SHADING,
) -> Response:
    looks = _looks(gw)
    try:
        request = await looks.view_request(
            user, scene_id, width, height, azimuth, elevation, camera, shading
        )
    except BadView as exc:
        raise ValidationError(str(exc)) from None
    result, _, _ = await _read(gw, request)
    png = await looks.image(user, result)
    if png is None:
        raise NotFound("the rendered view has expired from the store; render it again")
    return Response(png, media_type="image/png", headers={"X-Blendmesh-Run": result.run_id})


@router.get("/{sceneId}/view.png", response_class=Response, responses=_PNG)
async def render_view(
    scene_id: SceneId,
    user: User,
    gw: Gw,
    width: Side = 512,
    height: Side = 512,
    azimuth: Annotated[float, Query(ge=-360, le=360)] = DEFAULT_AZIMUTH,
    elevation: Annotated[float, Query(ge=-90, le=90)] = DEFAULT_ELEVATION,
    shading: Shading = DEFAULT_SHADING,
) -> Response:
    """A PNG of the caller's scene from ``azimuth``/``elevation`` degrees (azimuth 0 looks
    from -Y, 90 from +X; elevation 90 from above), framing the whole scene, shaded
    ``material`` (colours and textures), ``solid`` or ``rendered`` (Cycles, at most 1024
    pixels a side). A read: a run of one operation, audited, that makes no revision."""
    return await _view(gw, user, scene_id, width, height, azimuth, elevation, shading=shading)


@router.get("/{sceneId}/cameras/{camera}/view.png", response_class=Response, responses=_PNG)
async def render_camera_view(
    scene_id: SceneId,
    camera: Annotated[str, Path(min_length=1, max_length=63)],
    user: User,
    gw: Gw,
    width: Side = 512,
    height: Side = 512,
    shading: Shading = DEFAULT_SHADING,
) -> Response:
    """A PNG of the caller's scene through its camera object ``camera`` (404 when it has
    none of that name). A read like ``view.png``."""
    return await _view(gw, user, scene_id, width, height, camera=camera, shading=shading)


@router.post(
    "/{sceneId}/assets",
    status_code=202,
    response_model=SceneRun,
    responses={
        200: {"model": SceneRun, "description": "The import completed or failed"},
        202: {"model": SceneRun, "description": "The import waits for the approval it names"},
        **responses(401, 404, 413, 422, 503, 504),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": f"The asset file ({', '.join(EXTENSIONS)}; USD as text)",
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def import_asset(
    scene_id: SceneId,
    request: Request,
    response: Response,
    user: User,
    gw: Gw,
    filename: Annotated[str, Query(min_length=1, max_length=255, pattern=FILENAME_PATTERN)],
    collection: Annotated[str, Query(pattern=COLLECTION_PATTERN)],
) -> SceneRun:
    """Add the objects of the uploaded asset file (its format from ``filename``'s
    ending) to ``collection``, made when missing; a new scene id makes a new scene, the
    caller's. Files that refer to other files are refused (422)."""
    looks = _looks(gw)
    if await looks.scenes.files.head(scene_id) is not None:
        await gw.own_scene(scene_id, user)  # before reading a byte of someone else's import
    data = bytearray()
    async for chunk in request.stream():  # bounded while it arrives: asset_limit
        data += chunk
    try:
        built = await looks.asset_request(user, scene_id, bytes(data), filename, collection)
    except AssetRefused as exc:
        raise ValidationError(str(exc)) from None
    return await follow(gw, built, response)
