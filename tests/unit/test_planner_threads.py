"""The planner service carries a thread's last run to the next request of that thread,
so `it`, `the copy` and `again` mean what they meant; and it waits for a first catalog."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from contracts.events import Planned, PlanRejected, RunEvent
from services.executor.memory import StaticCatalog
from services.planner import handlers as planner_handlers
from services.runtime.service.errors import Retry
from tests.support.catalog_fixture import CATALOG
from tests.support.planners import planner
from tests.unit.test_handlers import requested


def ask(prompt: str, run: int, thread: str = "t1") -> Any:
    first = requested(prompt)
    return msgspec.structs.replace(first, run_id=f"r{run}", event_id=f"e{run}", thread_id=thread)


def names(events: Any) -> list[Any]:
    (planned,) = events
    assert isinstance(planned, Planned), planned
    return [op.args.get("name") for op in planned.operation_set.operations]


async def test_it_when_the_thread_made_an_object_last_run_means_that_object() -> None:
    handlers = planner()
    assert names(await handlers.on_requested(ask("add a cube named Crate", 1))) == ["Crate"]
    assert names(await handlers.on_requested(ask("move it to 1 2 3", 2))) == ["Crate"]


async def test_it_when_asked_in_another_thread_is_not_read_from_this_one() -> None:
    handlers = planner()
    await handlers.on_requested(ask("add a cube named Crate", 1))
    rejected, _failed = await handlers.on_requested(ask("move it to 1 2 3", 2, thread="t2"))
    assert isinstance(rejected, PlanRejected)
    assert rejected.failure.error_code == "REQUEST_UNREADABLE"
    assert '"it" does not refer to a named object here' in rejected.message


async def test_planner_when_the_first_catalog_comes_late_plans_once_it_is_there(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(planner_handlers, "CATALOG_POLL", 0.01)
    source = StaticCatalog(None)
    handlers = planner(source=source, catalog_wait=5.0)

    async def publish_later() -> None:
        await asyncio.sleep(0.05)
        source.catalog = CATALOG

    later = asyncio.create_task(publish_later())
    events = await handlers.on_requested(ask("add a cube named Late", 1))
    await later
    assert names(events) == ["Late"]
    assert all(isinstance(e, RunEvent) for e in events)


async def test_planner_when_no_catalog_comes_within_its_wait_retries_the_request_later(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(planner_handlers, "CATALOG_POLL", 0.01)
    handlers = planner(None, catalog_wait=0.1)
    began = asyncio.get_running_loop().time()
    with pytest.raises(Retry, match="no tool catalog yet"):
        await handlers.on_requested(ask("add a cube named Never", 1))
    assert 0.1 <= asyncio.get_running_loop().time() - began < 2
