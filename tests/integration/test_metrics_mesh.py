"""``/metrics`` on the gateway's port during real runs on a real mesh: the series move.

The gateway is served over real HTTP as ``blendmesh up`` serves it, the runs go through
every service (a real Blender bridge included), and the counts are read before and after
from the Prometheus text a scraper would read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

ANA = {"Authorization": "Bearer tok-ana"}
Scrape = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmmetrics", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-metrics")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens({"tok-ana": "ana"}), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            yield client
    finally:
        await server.stop()


async def scrape(http: httpx.AsyncClient) -> Scrape:
    response = await http.get("/metrics")  # no API token: a scraper is not a user
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(scraped: Scrape, name: str, **labels: str) -> float:
    return scraped.get((name, frozenset(labels.items())), 0.0)


def total(scraped: Scrape, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in scraped.items() if n == name and wanted <= have)


async def until(
    http: httpx.AsyncClient, moved: Callable[[Scrape], bool], within: float = 30.0
) -> Scrape:
    """Scrape until ``moved`` holds: the audit consumer measures runs just after they end."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        scraped = await scrape(http)
        if moved(scraped) or asyncio.get_running_loop().time() > deadline:
            return scraped
        await asyncio.sleep(0.1)


async def run(http: httpx.AsyncClient, prompt: str, scene: str) -> dict[str, Any]:
    response = await http.post(
        "/api/agent/run", json={"prompt": prompt, "sceneId": scene}, headers=ANA
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def test_metrics_when_runs_complete_and_wait_the_series_move(
    http: httpx.AsyncClient,
) -> None:
    before = await scrape(http)
    done = await run(http, "add a cube named Gauge", "metrics_scene")
    assert done["status"] == "completed", done

    def completed(s: Scrape) -> bool:
        runs = "blendmesh_runs_total"
        return value(s, runs, outcome="completed", error_code="none") > value(
            before, runs, outcome="completed", error_code="none"
        )

    after = await until(http, completed)
    assert completed(after)
    for name, labels in [
        ("blendmesh_run_duration_seconds_count", {"outcome": "completed"}),
        ("blendmesh_stage_duration_seconds_count", {"consumer": "planner"}),
        ("blendmesh_stage_duration_seconds_count", {"consumer": "policy"}),
        ("blendmesh_stage_duration_seconds_count", {"consumer": "executor"}),
        ("blendmesh_operations_total", {"tool": "object.create", "status": "succeeded"}),
        ("blendmesh_executor_busy_seconds_total", {}),
    ]:
        assert total(after, name, **labels) > total(before, name, **labels), (name, labels)
    assert ("blendmesh_consumer_lag_messages", frozenset({("consumer", "executor")})) in after

    waiting = await run(http, "delete Gauge", "metrics_scene")
    assert waiting["status"] == "awaiting_confirmation", waiting
    base = value(before, "blendmesh_approvals_waiting")
    asked = await until(http, lambda s: value(s, "blendmesh_approvals_waiting") > base)
    assert value(asked, "blendmesh_approvals_waiting") == base + 1

    pending = (await http.get("/api/agent/approvals/pending", headers=ANA)).json()["approvals"]
    ask = next(a for a in pending if a["runId"] == waiting["runId"])
    resolved = await http.post(
        "/api/agent/approvals/resolve",
        json={"approvalId": ask["approvalId"], "decision": "reject",
              "requestHash": ask["requestHash"]},
        headers=ANA,
    )  # fmt: skip
    assert resolved.json()["status"] == "failed", resolved.text

    def rejected(s: Scrape) -> bool:
        runs = "blendmesh_runs_total"
        code = {"outcome": "failed", "error_code": "APPROVAL_REJECTED"}
        return value(s, runs, **code) > value(before, runs, **code)

    end = await until(http, rejected)
    assert rejected(end)
    assert value(end, "blendmesh_approvals_waiting") == base
    assert value(end, "blendmesh_approval_wait_seconds_count") == (
        value(before, "blendmesh_approval_wait_seconds_count") + 1
    )
    # No series names a run, a scene or a user: every label value is from a closed set.
    for (_, labels), _v in end.items():
        for _, label in labels:
            assert "metrics_scene" not in label and waiting["runId"] not in label
            assert label != "ana"


async def test_metrics_when_token_configured_answers_401_without_it(
    mesh: tuple[Mesh, Bus],
) -> None:
    settings = mesh[0].settings.with_(metrics_token="scrape-secret")
    app = create_app(settings, mesh[1], Tokens({"tok-ana": "ana"}))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        bare = await client.get("/metrics")
        assert bare.status_code == 401
        assert bare.headers["WWW-Authenticate"].startswith("Bearer")
        assert "blendmesh_" not in bare.text
        as_user = await client.get("/metrics", headers=ANA)  # a user's token is not it
        assert as_user.status_code == 401
        right = await client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
        assert right.status_code == 200
        assert "blendmesh_" in right.text
