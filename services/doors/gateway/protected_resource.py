"""``GET /.well-known/oauth-protected-resource`` (and ``.../mcp``): RFC 9728 metadata.

No token is needed: a client reads it to learn where to get one. Browser-based MCP
clients read it from another origin, so it is served to any (it holds nothing secret).
Without BLENDMESH_OAUTH_ISSUER there is no authorization server to name: 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from services.doors.gateway.auth import Authenticator
from services.doors.gateway.errors import NotFound, responses
from services.doors.gateway.oauth.resource import WELL_KNOWN, document

router = APIRouter(tags=["oauth"])


class ResourceMetadata(BaseModel):
    """RFC 9728 §2: the fields blendmesh publishes."""

    resource: str
    authorization_servers: list[str]
    bearer_methods_supported: list[str]
    resource_signing_alg_values_supported: list[str]
    resource_name: str
    scopes_supported: list[str] | None = None


def _answer(request: Request) -> JSONResponse:
    auth: Authenticator = request.app.state.auth
    if auth.rules is None:
        raise NotFound(
            "this gateway takes static bearer tokens only (no BLENDMESH_OAUTH_ISSUER is set)"
        )
    return JSONResponse(
        document(auth.rules),
        headers={"Access-Control-Allow-Origin": "*", "Cache-Control": "max-age=300"},
    )


@router.get(WELL_KNOWN, response_model=ResourceMetadata, responses=responses(404))
async def resource_metadata(request: Request) -> JSONResponse:
    """Where to get a token for the HTTP API and ``/mcp``, and for which resource."""
    return _answer(request)


@router.get(f"{WELL_KNOWN}/mcp", response_model=ResourceMetadata, responses=responses(404))
async def mcp_resource_metadata(request: Request) -> JSONResponse:
    """The same, at the address the MCP authorization spec derives from ``/mcp``."""
    return _answer(request)
