"""What only the in-memory bus can show of a run: a request event delivered twice, and a
planner bound after the runs hearing the whole log. The flows both buses share are in
tests/flows."""

from __future__ import annotations

from contracts.events import Executed, RunCompleted
from services.executor.memory import StaticCatalog
from services.planner.handlers import PlannerHandlers, filter_subjects
from services.runtime.service.consumer_spec import ConsumerSpec
from tests.support.catalog_fixture import CATALOG
from tests.support.memory_mesh import MemoryMesh


async def test_the_same_request_event_twice_when_published_is_one_run(mesh: MemoryMesh) -> None:
    request = mesh.request("dup", "add a cube named Dup")
    await mesh.submit(request)
    again = await mesh.submit(request)
    assert again.status == "completed"
    events = await mesh.history(request.run_id)
    assert sum(isinstance(e, Executed) for e in events) == 1
    assert sum(isinstance(e, RunCompleted) for e in events) == 1


async def test_run_when_a_new_planner_hears_the_whole_log_again_gives_no_second_outcome(
    mesh: MemoryMesh,
) -> None:
    result = await mesh.run("replayed", "add a cube named Again")
    assert result.status == "completed"
    before = len(mesh.bus.log)
    # A planner whose consumer was recreated: bound now, it is delivered the log from its
    # start, and asks the log only whether each run ended.
    again = PlannerHandlers(
        catalog=StaticCatalog(CATALOG), history=mesh.bus.history, kinds=mesh.bus.kinds
    )
    mesh.bus.add(ConsumerSpec("planner-again", filter_subjects(mesh.bus.prefix), again.handle))
    assert await mesh.bus.run_until_quiet() > 0
    assert len(mesh.bus.log) == before
    events = await mesh.history(result.run_id)
    assert sum(isinstance(e, RunCompleted) for e in events) == 1
