"""A real run's log lines name it (spec 000, correlation rule 4): real nats-server, real bpy."""

from __future__ import annotations

import logging

import pytest

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus
from services.runtime.service.log_context import LOG_FORMAT, install
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.clause("000-§correlation.4"),
]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmlogs", user="ana", previews=False
    )


mesh = mesh_fixture()


async def test_executor_and_planner_log_lines_of_a_run_name_its_run_and_request(
    mesh: tuple[Mesh, Bus], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="blendmesh")
    install([caplog.handler])  # as a service process does to its own handler
    request = build_request(
        user="ana",
        scene_id="logged",
        prompt="add a cube named Box at 0 0 1, then move Box to 2 0 1",
    )
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    assert result.status == "completed", result

    def of(logger: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == logger]

    planned = [r for r in of("blendmesh.planner") if r.getMessage().startswith("planned")]
    operations = of("blendmesh.executor")
    assert planned and len(operations) == 2, [r.getMessage() for r in caplog.records]
    for record in [*planned, *operations]:
        assert record.run_id == request.run_id  # type: ignore[attr-defined]
        assert record.request_id == request.request_id  # type: ignore[attr-defined]
    receipts = {r.operation_id: r for r in result.receipts}
    for record in operations:
        receipt = receipts[record.operation_id]  # type: ignore[attr-defined]
        assert record.mcp_call_id == receipt.mcp_call_id  # type: ignore[attr-defined]
        assert record.blender_mutation_id == receipt.blender_mutation_id  # type: ignore[attr-defined]
        assert receipt.blender_mutation_id, "each operation committed a mutation"
    line = logging.Formatter(LOG_FORMAT).format(operations[0])
    assert f"run_id={request.run_id} request_id={request.request_id}" in line
    assert f"mcp_call_id={operations[0].mcp_call_id}" in line  # type: ignore[attr-defined]
