"""Every door's error answers, scanned for what no user or model may read: a traceback, a
host folder (the home, the checkout, the Python installation) or a frame of Blender's
code. On a real mesh with real bpy: the gateway's HTTP routes, MCP over streamable HTTP,
and the bus door, each driven into its failures, including an importer that raises inside
Blender (which once put its traceback in the run's summary, message and retry hint).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
import pytest
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client
from nats.errors import Error as NatsError

from contracts import subjects
from contracts.door import run_prefix
from services.doors.cli.mesh import Mesh
from services.runtime.nats import access
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.asset_files import glb, gltf_document
from tests.support.checked_session import CheckedSession
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import plan
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmerrors"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
ANA = {"Authorization": "Bearer tok-ana"}


def broken_glb() -> bytes:
    """A glTF whose sizes are sound but whose mesh names an accessor that does not exist:
    Blender's importer raises an IndexError from deep in its Python code."""
    doc = gltf_document()
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 4
    return glb(doc)


def missing_object() -> dict[str, Any]:
    return plan(
        {"operation_id": "m", "tool_name": "object.transform", "depends_on": [],
         "args": {"name": "Nobody", "location": [0, 0, 1]}, "safety_level": "safe_write"}
    )  # fmt: skip


def unknown_tool() -> dict[str, Any]:
    return plan(
        {"operation_id": "u", "tool_name": "os.system", "depends_on": [],
         "args": {"command": "id"}, "safety_level": "safe_write"}
    )  # fmt: skip


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="ana", previews=False)


mesh = mesh_fixture(client="test-error-answers")


def assert_clean(where: str, text: str, home: Path) -> None:
    """``text`` names nothing of the host: no traceback, no folder of it."""
    for word in ("Traceback", "site-packages", 'File "', "Location: ", "/root/"):
        assert word not in text, f"{where}: {word!r} in {text[:2000]}"
    for folder in (home, PROJECT_ROOT, Path(sys.prefix), Path(sys.base_prefix)):
        assert str(folder) not in text, f"{where}: {folder} in {text[:2000]}"


gateway = gateway_fixture({"tok-ana": "ana"})


async def test_http_errors_name_nothing_of_the_host(gateway: str, mesh_settings: Settings) -> None:
    home = mesh_settings.home
    answers: list[tuple[str, httpx.Response]] = []
    async with httpx.AsyncClient(base_url=gateway, headers=ANA, timeout=180) as http:
        asked = [
            ("POST", "/api/runs", {"json": {"plan": missing_object(), "sceneId": "errs"}}),
            ("POST", "/api/runs", {"json": {"plan": unknown_tool(), "sceneId": "errs"}}),
            ("POST", "/api/runs", {"content": b"{not json"}),
            ("POST", "/api/runs", {"json": {"prompt": "x" * 5000}}),
            ("GET", "/api/runs/run-nobody-has", {}),
            ("GET", "/api/scenes/nowhere", {}),
            ("POST", "/api/scenes/errs-import/import", {"content": b"not a blend"}),
            (
                "POST",
                "/api/scenes/errs-asset/assets?filename=broken.glb&collection=Props",
                {"content": broken_glb()},
            ),
            ("GET", "/api/nothing-here", {}),
        ]
        for method, path, kwargs in asked:
            answers.append((f"{method} {path}", await http.request(method, path, **kwargs)))
    for where, response in answers:
        assert response.status_code != 500, (where, response.text)
        assert_clean(where, response.text, home)
    imported = answers[7][1]
    assert "IndexError" in imported.text, imported.text  # told, by its last line


async def test_mcp_errors_name_nothing_of_the_host(gateway: str, mesh_settings: Settings) -> None:
    calls = [
        ("run", {"plan": missing_object(), "scene_id": "errs-mcp"}),
        ("run", {"plan": unknown_tool(), "scene_id": "errs-mcp"}),
        ("run_status", {"run_id": "run-nobody-has"}),
        (
            "import_asset",
            {"scene_id": "errs-mcp-asset", "filename": "broken.glb", "collection": "Props",
             "data": base64.b64encode(broken_glb()).decode()},
        ),
    ]  # fmt: skip
    async with (
        httpx.AsyncClient(headers=ANA, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(f"{gateway}/mcp", http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        for name, args in calls:
            answer: types.CallToolResult = await session.call_tool(name, args)
            text = json.dumps([c.model_dump() for c in answer.content])
            text += json.dumps(answer.structuredContent or {})
            assert answer.isError or (answer.structuredContent or {}).get("status") != "completed"
            assert_clean(f"mcp {name}", text, mesh_settings.home)


async def _quiet(exc: Exception) -> None:
    """Refused logins until the server admits the new key."""


async def test_bus_door_errors_name_nothing_of_the_host(
    mesh: tuple[Mesh, Bus], mesh_settings: Settings
) -> None:
    seed = register(mesh_settings.home, "ben")
    nc = Client()
    for _ in range(50):
        try:
            await nc.connect(
                mesh[0].url,
                nkeys_seed_str=seed.decode(),
                error_cb=_quiet,
                inbox_prefix=access.user_inbox_prefix("ben"),
                allow_reconnect=False,
            )
            break
        except (NatsError, OSError):  # not admitted yet, refused or reset mid-login
            await nc.close()
            nc = Client()
            await asyncio.sleep(0.1)
    try:
        texts = []
        for verb, body in (
            ("run.events", b'{"run_id": "run-nobody-has"}'),
            ("files.stage", b"not json"),
            ("run.submit", b'{"type": "run.requested"}'),
            ("nothing.here", b"{}"),
        ):
            reply = await nc.request(subjects.door_api(PREFIX, "ben", verb), body, timeout=30)
            texts.append((verb, reply.data.decode()))
        failed = await submitted(nc, missing_object())
        texts.append(("run.submit (a failing run)", json.dumps(failed)))
        for where, text in texts:
            assert_clean(f"bus {where}", text, mesh_settings.home)
        assert failed["type"] == "run.failed"
    finally:
        await nc.close()


async def submitted(nc: Client, plan_: dict[str, Any]) -> dict[str, Any]:
    run_id = f"{run_prefix('ben')}-{uuid.uuid4().hex[:16]}"
    request = {
        "type": "run.requested", "event_id": str(uuid.uuid4()), "at": time.time(),
        "run_id": run_id, "request_id": plan_["request_id"],
        "thread_id": f"thread-{uuid.uuid4().hex[:16]}", "user": "ben", "scene_id": "errs-bus",
        "plan": plan_, "planner": "plan",
    }  # fmt: skip
    sub = await nc.subscribe(subjects.feed(PREFIX, "ben", run_id))
    try:
        reply = await nc.request(
            subjects.door_api(PREFIX, "ben", "run.submit"), json.dumps(request).encode(), timeout=30
        )
        assert json.loads(reply.data)["ok"], reply.data
        while True:
            event: dict[str, Any] = json.loads((await sub.next_msg(timeout=120)).data)
            if event["type"] in ("run.completed", "run.failed"):
                return event
    finally:
        await sub.unsubscribe()
