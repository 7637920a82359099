"""``GET /metrics``: the process's ``blendmesh_*`` series for Prometheus.

No API token: a scraper is an operator's tool, not a user, and the series hold no
user's data (no run, scene or user ids, no free text; services/runtime/service/metrics.py bounds
every label). An operator who serves the gateway beyond a trusted network sets
BLENDMESH_METRICS_TOKEN, and then ``/metrics`` asks for it as a bearer token of its own,
never one of the users' (docs/operations.md).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request, Response

from services.doors.gateway import errors
from services.doors.gateway.context import gateway
from services.runtime.service import metrics
from services.runtime.service.metrics_server import authorized

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
async def metrics_page(request: Request) -> Response:
    """Every series this process records; in ``blendmesh up``, the whole mesh's."""
    token = gateway(request).settings.metrics_token
    if not authorized(request.headers.get("authorization"), token):
        raise errors.OperatorAuthError(
            "send Authorization: Bearer <BLENDMESH_METRICS_TOKEN> for /metrics"
        )
    # The exposition computes every aggregate: off the loop, which serves the runs.
    body = await asyncio.to_thread(metrics.exposition)
    return Response(content=body, media_type=metrics.CONTENT_TYPE)
