"""Query parameters the OpenAPI document does not name are refused, not ignored.

FastAPI drops what a route does not declare, so ``?users=ana`` (for ``?user=ana``) would
answer for every user, and the caller would never learn of the typo. The document the
gateway publishes is the contract: a parameter it does not name gets a 422 that names it.
"""

from __future__ import annotations

from fastapi import FastAPI, Request

from services.doors.gateway import errors

SHOWN = 3  # unknown names a refusal lists at most
NAME_CHARS = 40  # of each


def declared(app: FastAPI) -> dict[tuple[str, str], frozenset[str]]:
    """(method, path template) -> the query parameters the OpenAPI document names."""
    found: dict[tuple[str, str], frozenset[str]] = {}
    for path, operations in app.openapi().get("paths", {}).items():
        for method, operation in operations.items():
            params = operation.get("parameters", [])
            names = frozenset(p["name"] for p in params if p.get("in") == "query")
            found[(method.upper(), path)] = names
    return found


async def known_query(request: Request) -> None:
    """An app-wide dependency: 422 for a query parameter the route's document lacks."""
    route = request.scope.get("route")
    path = getattr(route, "path_format", None)
    app: FastAPI = request.app
    if not hasattr(app.state, "query_names"):
        app.state.query_names = declared(app)
    names = app.state.query_names.get((request.method, path))
    if names is None:  # not a documented operation (the console's page, HEAD)
        return
    unknown = sorted(set(request.query_params) - names)
    if unknown:
        shown = ", ".join(repr(name[:NAME_CHARS]) for name in unknown[:SHOWN])
        more = f" and {len(unknown) - SHOWN} more" if len(unknown) > SHOWN else ""
        takes = ", ".join(sorted(names)) or "none"
        raise errors.ValidationError(
            f"unknown query parameter {shown}{more}; {request.method} {path} takes: {takes}"
        )
