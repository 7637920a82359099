"""The spec 002 §8 error taxonomy as HTTP: one table, safe messages, one JSON shape.

    ApiError
    ├── ValidationError      422 (BadRequest 400: a body that is not JSON at all;
    │                             TooLarge 413: a body or a plan over a size limit)
    ├── AuthError            401, with WWW-Authenticate (InvalidToken: a token was sent
    │                             and refused; InsufficientScope 403: it lacks a scope)
    ├── NotFound             404: unknown, or someone else's (the two look the same)
    ├── PolicyError          403
    ├── Conflict             409
    ├── ToolExecutionError   502
    ├── ModelError           502 (503 while the model is unavailable)
    ├── Unavailable          503: the mesh or the audit service did not answer
    └── Timeout              504

A message is written for the caller and never echoes a prompt, a plan's args, a token
or a stack trace; the log gets the error's class and the route, not the payload. The
scene door's refusals (``services/doors/core/scene_client.py``) and the ownership rule's
(``services/doors/core/ownership.py``) answer as the class ``DOOR_ERRORS`` names for them.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from nats.errors import Error as NatsError
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from contracts.errors import BlendmeshError
from contracts.failures import ErrorCode
from contracts.renders import RenderRefused
from contracts.reviews import ReviewRefused
from services.doors.core.ownership import NotOwned
from services.doors.core.quota import QuotaExceeded
from services.doors.core.renders import RenderQuotaExceeded
from services.doors.core.reviews import NoRevision
from services.doors.core.scene_client import (
    LibraryProblem,
    NoScene,
    NotABlend,
    SceneFileChanged,
    UploadTooLarge,
)
from services.doors.core.studio import BadStudioRequest, Forbidden, ProjectExists, SceneLocked
from services.runtime.nats.quorum import JetStreamUnavailable
from services.runtime.service.projects import BookBehind

log = logging.getLogger("blendmesh.gateway")


class ApiError(BlendmeshError):
    """An answer other than success; ``str(exc)`` is safe to show the caller."""


class ValidationError(ApiError):
    """The request does not match the route's schema."""


class BadRequest(ValidationError):
    """The body is not even JSON."""


class TooLarge(ValidationError):
    """The body, or the plan in it, is larger than the gateway accepts."""


class AuthError(ApiError):
    """No bearer token, or one that maps to no user."""


class InvalidToken(AuthError):
    """A bearer token was sent and refused (RFC 6750 ``error="invalid_token"``)."""


class InsufficientScope(AuthError):
    """The token is good but lacks a scope blendmesh requires (RFC 6750, 403)."""


class OperatorAuthError(AuthError):
    """``/metrics`` without BLENDMESH_METRICS_TOKEN: no OAuth token grants it, so its
    challenge names no protected-resource metadata."""


class NotFound(ApiError):
    """Unknown, or owned by another user: a caller cannot tell which."""


class PolicyError(ApiError):
    """Blocked by policy."""


class Conflict(ApiError):
    """The request contradicts the current state (a stale approval hash)."""


class ToolExecutionError(ApiError):
    """A Blender tool failed."""


class ModelError(ApiError):
    """The model could not be called or its answer could not be used."""


class ModelUnavailable(ModelError):
    """The model cannot be reached right now."""


class Unavailable(ApiError):
    """A service the gateway relies on did not answer."""


class Timeout(ApiError):
    """The run did not reach an answer in time; it goes on in the mesh."""


class TooMany(ApiError):
    """The user sent more than their share; the message names the limit and its setting."""


# The one table: most specific classes first, since the first match wins.
STATUS: dict[type[ApiError], int] = {
    BadRequest: 400,
    TooLarge: 413,
    ValidationError: 422,
    InsufficientScope: 403,
    AuthError: 401,
    NotFound: 404,
    PolicyError: 403,
    Conflict: 409,
    ToolExecutionError: 502,
    ModelUnavailable: 503,
    ModelError: 502,
    Unavailable: 503,
    Timeout: 504,
    TooMany: 429,
}

# The refusals of what the doors share (the scene door, the ownership rule), as the class
# each answers as.
DOOR_ERRORS: dict[type[BlendmeshError], type[ApiError]] = {
    NotOwned: NotFound,
    NoScene: NotFound,
    NoRevision: NotFound,
    ReviewRefused: ValidationError,
    UploadTooLarge: TooLarge,
    NotABlend: ValidationError,
    LibraryProblem: ValidationError,
    SceneFileChanged: Conflict,
    QuotaExceeded: TooMany,
    Forbidden: PolicyError,
    SceneLocked: Conflict,
    ProjectExists: Conflict,
    BadStudioRequest: ValidationError,
    BookBehind: Unavailable,
    RenderRefused: ValidationError,
    RenderQuotaExceeded: PolicyError,
}

# The 002 class a failed run's error code belongs to: a run that ended failed is still a
# run response (200, ``ok: false``); its ``failure.type`` names the class.
FAILURE_TYPE: dict[ErrorCode, type[ApiError]] = {
    "SCHEMA_INVALID": ValidationError,
    "GRAPH_CYCLE": ValidationError,
    "GRAPH_MISSING_DEPENDENCY": ValidationError,
    "GRAPH_DUPLICATE_OPERATION": ValidationError,
    "TOOL_UNKNOWN": ValidationError,
    "ARGS_INVALID": ValidationError,
    "SAFETY_LEVEL_MISMATCH": ValidationError,
    "REQUEST_UNREADABLE": ValidationError,
    "POLICY_BLOCKED": PolicyError,
    "APPROVAL_REJECTED": PolicyError,
    "APPROVAL_EXPIRED": PolicyError,
    "CAPABILITY_MISSING": ToolExecutionError,
    "TOOL_ERROR": ToolExecutionError,
    "TOOL_TIMEOUT": ToolExecutionError,
    "IDEMPOTENCY_CONFLICT": Conflict,
    "ROLLBACK_FAILED": ToolExecutionError,
    "LEASE_LOST": Conflict,
    "DEPENDENCY_FAILED": ToolExecutionError,
    "INTERNAL_ERROR": ToolExecutionError,
    "MODEL_ERROR": ModelError,
    "GATES_FAILED": ToolExecutionError,
    "RUN_CANCELLED": Conflict,
    "CATALOG_UNSERVED": Conflict,
}


def status_of(error: ApiError) -> int:
    """The status of ``error``'s class; 500 for the bare ``ApiError`` of an unexpected fault."""
    return next((code for kind, code in STATUS.items() if isinstance(error, kind)), 500)


def type_name(kind: type[ApiError]) -> str:
    """The name a client sees; the subclasses that only pick a status keep their parent's."""
    names: dict[type[ApiError], str] = {
        BadRequest: "ValidationError",
        TooLarge: "ValidationError",
        ModelUnavailable: "ModelError",
        InvalidToken: "AuthError",
        InsufficientScope: "AuthError",
        OperatorAuthError: "AuthError",
    }
    return names.get(kind, kind.__name__)


class ErrorDetail(BaseModel):
    type: str
    message: str


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": {"type", "message"}}``."""

    error: ErrorDetail


_DESCRIPTIONS = {
    400: "The body is not JSON (ValidationError)",
    401: "No or unknown bearer token (AuthError)",
    403: "Blocked by policy (PolicyError), or the token lacks a scope (AuthError)",
    404: "Unknown, or another user's (NotFound)",
    409: "Conflicts with the current state (Conflict)",
    413: "The body or its plan is over a size limit (ValidationError)",
    422: "The request does not match the schema (ValidationError)",
    429: "More than the user's share of requests or bytes a second (TooMany)",
    502: "A tool or the model failed (ToolExecutionError, ModelError)",
    503: "The mesh, the audit service or the model is unavailable",
    504: "No answer in time; the run goes on in the mesh (Timeout)",
}


def responses(*codes: int, by_ref: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` for the error statuses a route can answer.

    ``by_ref`` for routes whose success is not JSON: FastAPI would give a ``model`` their
    media type, but errors are always ``application/json``.
    """
    if by_ref:
        ref = {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
        return {
            code: {"description": _DESCRIPTIONS[code], "content": {"application/json": ref}}
            for code in codes
        }
    return {code: {"model": ErrorBody, "description": _DESCRIPTIONS[code]} for code in codes}


def challenge_error(kind: type[ApiError]) -> str | None:
    """The RFC 6750 ``error`` of an AuthError's challenge: none when no token was sent."""
    if issubclass(kind, InsufficientScope):
        return "insufficient_scope"
    return "invalid_token" if issubclass(kind, InvalidToken) else None


def error_response(
    kind: type[ApiError], status: int, message: str, challenge: str | None = None
) -> JSONResponse:
    """The error body; an AuthError's answer carries ``challenge`` as WWW-Authenticate."""
    body = ErrorBody(error=ErrorDetail(type=type_name(kind), message=message))
    if challenge is None and issubclass(kind, AuthError):
        challenge = 'Bearer realm="blendmesh"'
    headers = {"WWW-Authenticate": challenge} if challenge is not None else None
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def classify(exc: Exception) -> ApiError:
    """The error an exception answers as, by the same rules as ``install``: for a route whose
    status is sent already (the NDJSON stream's error line)."""
    if isinstance(exc, ApiError):
        return exc
    door = next((api for kind, api in DOOR_ERRORS.items() if isinstance(exc, kind)), None)
    if door is not None:
        return door(str(exc))
    if isinstance(exc, JetStreamUnavailable):
        return Unavailable(str(exc))
    if isinstance(exc, NatsError | TimeoutError):
        return Unavailable("the mesh did not answer; retry when it is up")
    return ApiError("the gateway failed; see its log")


def allowed_methods(request: Request) -> str:
    """Every method some route of the app takes at ``request``'s path, for a 405's Allow."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


def install(app: FastAPI) -> None:
    """Route every error through the table, including FastAPI's and Starlette's own."""

    async def on_api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        status = status_of(exc)
        if status >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, type(exc).__name__)
        auth = getattr(request.app.state, "auth", None)
        challenge = None
        operator = isinstance(exc, OperatorAuthError)
        if isinstance(exc, AuthError) and auth is not None and not operator:
            # names the protected-resource metadata, when OAuth is on
            challenge = auth.challenge(type(exc))
        return error_response(type(exc), status, str(exc), challenge)

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(BadRequest, 400, "the body is not valid JSON")
        # Name the fields and what is wrong with them, never the values sent.
        parts = [
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', 'invalid')}"
            for e in errors[:5]
        ]
        return error_response(ValidationError, 422, "; ".join(parts) or "invalid request")

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        # 400: FastAPI could not parse the body (e.g. JSON nested too deeply to read).
        known: dict[int, type[ApiError]] = {400: BadRequest, 401: AuthError, 404: NotFound}
        kind = known.get(exc.status_code, ApiError)
        if exc.status_code == 404:
            return error_response(NotFound, 404, "no such route")
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # Starlette names the methods of the first route whose path matched; a path
            # with a route per method (GET and POST /api/projects) has them all.
            headers = {**(headers or {}), "Allow": allowed_methods(request)}
        return JSONResponse(
            ErrorBody(
                error=ErrorDetail(type=type_name(kind), message=str(exc.detail))
            ).model_dump(),
            status_code=exc.status_code,
            headers=headers,
        )

    async def on_door_error(request: Request, exc: Exception) -> JSONResponse:
        kind = next(api for door, api in DOOR_ERRORS.items() if isinstance(exc, door))
        return error_response(kind, STATUS[kind], str(exc))

    async def on_mesh_down(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: the mesh: %s", request.method, request.url.path, type(exc).__name__)
        return error_response(Unavailable, 503, "the mesh did not answer; retry when it is up")

    async def on_no_quorum(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_response(Unavailable, 503, str(exc))

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, type(exc).__name__)
        return error_response(ApiError, 500, "the gateway failed; see its log")

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    for door_error in DOOR_ERRORS:
        app.add_exception_handler(door_error, on_door_error)
    app.add_exception_handler(NatsError, on_mesh_down)
    app.add_exception_handler(JetStreamUnavailable, on_no_quorum)
    app.add_exception_handler(Exception, on_unexpected)
