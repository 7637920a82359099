"""Log records name the correlation ids that apply (spec 000, correlation rule 4).

The consumer loop runs here on a fake NATS client (the loop's settling is not under test,
the context around the handler is); the executor on the in-memory bridge.
"""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from contracts import events as ev
from contracts.events import Event
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery, Handler
from services.runtime.service.log_context import (
    IDS,
    LOG_FORMAT,
    MAX_ID_CHARS,
    CorrelationFilter,
    correlated,
    current,
    ids_of,
    install,
    shared_ids,
)
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import CUBE, Recorder, approved, runner

pytestmark = pytest.mark.clause("000-§correlation.4")

log = logging.getLogger("blendmesh.test")


def requested(run_id: str, request_id: str = "req-1", event_id: str = "ev-1") -> ev.RunRequested:
    return ev.RunRequested(
        event_id=event_id,
        at=1.0,
        run_id=run_id,
        request_id=request_id,
        thread_id="th-1",
        user="ana",
        scene_id="shot",
        prompt="add a cube",
    )


class FakeClient:
    """What a delivered message settles through: acks are recorded, not sent."""

    def __init__(self) -> None:
        self.acks: list[str] = []

    async def request(self, subject: str, payload: bytes = b"", timeout: float = 1.0) -> None:
        self.acks.append(subject)

    async def publish(self, subject: str, payload: bytes = b"", **_: Any) -> None:
        self.acks.append(subject)


class Published:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def publish(self, event: Event) -> None:
        self.events.append(event)


def delivered(client: FakeClient, event: Event, seq: int) -> Msg:
    reply = f"$JS.ACK.bmtest-events.test.1.{seq}.{seq}.1700000000000000000.0"
    data = msgspec.json.encode(event)
    return Msg(cast(Any, client), subject="bmtest.run", reply=reply, data=data)


def loop(handler: Handler) -> ConsumerLoop:
    spec = ConsumerSpec(durable="test", filter_subjects=["bmtest.>"], handler=handler)
    js = cast(JetStreamContext, object())  # process() never reaches JetStream itself
    return ConsumerLoop(js, cast(Any, Published()), "bmtest", spec)


class Captured(logging.Handler):
    """The records of ``blendmesh.test`` as a service's handler would print them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.records: list[logging.LogRecord] = []
        self.setFormatter(logging.Formatter(LOG_FORMAT))
        install([self])

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))


@pytest.fixture
def captured() -> Any:
    handler = Captured()
    for name in ("blendmesh.test", "blendmesh.executor"):
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield handler
    for name in ("blendmesh.test", "blendmesh.executor"):
        logging.getLogger(name).removeHandler(handler)
        logging.getLogger(name).setLevel(logging.NOTSET)


async def test_log_line_inside_a_handler_names_the_events_run_and_request(
    captured: Captured,
) -> None:
    async def handler(event: Any, delivery: Delivery) -> Sequence[Event]:
        log.info("handling %s", event.event_id)
        return []

    client = FakeClient()
    await loop(handler).process(delivered(client, requested("run-7", "req-7", "ev-7"), 1))
    assert client.acks, "the message was settled"
    [line] = captured.lines
    assert line.endswith("handling ev-7 [run_id=run-7 request_id=req-7 event_id=ev-7]")
    record = captured.records[0]
    assert (record.run_id, record.request_id, record.operation_id) == ("run-7", "req-7", None)


async def test_failing_handler_logs_its_failure_with_the_events_ids(captured: Captured) -> None:
    async def handler(event: Any, delivery: Delivery) -> Sequence[Event]:
        raise RuntimeError("the store is away")

    consumer_log = logging.getLogger("blendmesh.consumer")
    consumer_log.addHandler(captured)
    try:
        await loop(handler).process(delivered(FakeClient(), requested("run-9"), 1))
    finally:
        consumer_log.removeHandler(captured)
    failure = next(r for r in captured.records if "handler failed" in r.getMessage())
    assert failure.run_id == "run-9"


async def test_ids_of_one_event_do_not_stay_for_the_next_in_the_same_loop(
    captured: Captured,
) -> None:
    async def handler(event: Any, delivery: Delivery) -> Sequence[Event]:
        log.info("handling")
        return []

    started = ev.OperationStarted(
        event_id="ev-op",
        at=1.0,
        run_id="run-1",
        request_id="req-1",
        thread_id="th-1",
        user="ana",
        operation_id="op01",
        mcp_call_id="call-1",
        tool_name="object.create",
        scene_hash_before="h",
    )
    consumer, client = loop(handler), FakeClient()
    await consumer.process(delivered(client, started, 1))  # one after the other, one task
    await consumer.process(delivered(client, requested("run-2", "req-2", "ev-2"), 2))
    first, second = captured.records
    assert (first.operation_id, first.mcp_call_id) == ("op01", "call-1")  # type: ignore[attr-defined]
    assert (second.run_id, second.operation_id, second.mcp_call_id) == ("run-2", None, None)  # type: ignore[attr-defined]
    assert current() == {}


async def test_ids_of_concurrent_events_do_not_leak_into_each_other_or_after(
    captured: Captured,
) -> None:
    both_inside = asyncio.Barrier(2)

    async def handler(event: Any, delivery: Delivery) -> Sequence[Event]:
        log.info("before")
        await both_inside.wait()  # the two handlings interleave here
        asyncio.create_task(spawned()).add_done_callback(lambda _: None)
        await asyncio.sleep(0)
        log.info("after")
        return []

    async def spawned() -> None:
        log.info("spawned")  # a task started by a handler keeps its event's ids

    consumer = loop(handler)
    client = FakeClient()
    await asyncio.gather(
        consumer.process(delivered(client, requested("run-a", "req-a", "ev-a"), 1)),
        consumer.process(delivered(client, requested("run-b", "req-b", "ev-b"), 2)),
    )
    log.info("between events")
    by_run: dict[str | None, list[str]] = {}
    for r in captured.records:
        by_run.setdefault(r.run_id, []).append(r.getMessage())  # type: ignore[attr-defined]
        assert r.request_id == {"run-a": "req-a", "run-b": "req-b", None: None}[r.run_id]  # type: ignore[attr-defined]
    assert sorted(by_run["run-a"]) == sorted(by_run["run-b"]) == ["after", "before", "spawned"]
    assert by_run[None] == ["between events"]
    assert captured.lines[-1].endswith("between events")  # no ids, no brackets
    assert current() == {}


def test_a_batch_logs_only_the_ids_its_events_share() -> None:
    same = [requested("run-1", "req-1", f"ev-{i}") for i in range(2)]
    assert shared_ids(same) == {"run_id": "run-1", "request_id": "req-1"}
    assert shared_ids([*same, requested("run-2", "req-2")]) == {}
    assert shared_ids([]) == {}


async def test_executor_logs_each_operation_with_its_call_and_mutation_ids(
    captured: Captured, tmp_path: Path
) -> None:
    recorder = Recorder()
    with correlated(run_id="run-x"):
        await runner(FakeBridge(), tmp_path).run(approved(CUBE), recorder)
    done = next(e for e in recorder.events if isinstance(e, ev.OperationSucceeded))
    [record] = [r for r in captured.records if r.name == "blendmesh.executor"]
    assert record.getMessage().startswith("object.create succeeded")
    assert record.run_id == "run-x"  # type: ignore[attr-defined]
    assert record.operation_id == "op01"  # type: ignore[attr-defined]
    assert record.mcp_call_id == done.mcp_call_id  # type: ignore[attr-defined]
    assert record.blender_mutation_id == done.blender_mutation_id  # type: ignore[attr-defined]
    assert done.blender_mutation_id, "a created cube is a committed mutation"


def test_operation_events_carry_their_call_and_mutation_ids_into_the_context() -> None:
    started = ev.OperationStarted(
        event_id="e",
        at=1.0,
        run_id="r",
        request_id="q",
        thread_id="t",
        user="ana",
        operation_id="op01",
        mcp_call_id="call-1",
        tool_name="object.create",
        scene_hash_before="h",
    )
    assert ids_of(started) == {
        "event_id": "e",
        "run_id": "r",
        "request_id": "q",
        "operation_id": "op01",
        "mcp_call_id": "call-1",
    }
    assert ids_of(None) == {}


def test_hostile_ids_cannot_forge_fields_or_lines(captured: Captured) -> None:
    with correlated(run_id="r1 request_id=forged\nFAKE LINE", request_id="x" * 10_000):
        log.info("look")
    [line] = captured.lines
    assert "\n" not in line
    assert " request_id=forged" not in line and " FAKE" not in line
    assert "run_id=r1?request_id=forged?FAKE?LINE" in line
    assert f"request_id={'x' * MAX_ID_CHARS}..." in line and "x" * (MAX_ID_CHARS + 1) not in line


def test_unknown_id_name_is_refused_naming_the_known_ones() -> None:
    refused = pytest.raises(ValueError, match=r"unknown correlation ids \['runid'\].*run_id")
    with refused, correlated(runid="r1"):
        pass
    assert current() == {}


def test_none_or_empty_ids_are_left_out_and_inner_blocks_restore_the_outer() -> None:
    with correlated(run_id="outer", mcp_call_id=None, blender_mutation_id=""):
        with correlated(run_id="inner", operation_id="op"):
            assert current() == {"run_id": "inner", "operation_id": "op"}
        assert current() == {"run_id": "outer"}
    assert current() == {}


def test_filter_keeps_every_record_and_sets_every_id_attribute() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    assert CorrelationFilter().filter(record) is True
    assert record.correlation == ""  # type: ignore[attr-defined]
    assert all(getattr(record, name) is None for name in IDS)


def test_install_adds_the_filter_once() -> None:
    handler = logging.NullHandler()
    install([handler])
    install([handler])
    assert sum(isinstance(f, CorrelationFilter) for f in handler.filters) == 1


PROCESS = """
import logging
from services.runtime.service.log_context import configure, correlated
configure(logging.INFO)
configure(logging.INFO)  # twice: still one filter, one line per record
with correlated(run_id="run-p", request_id="req-p"):
    logging.getLogger("blendmesh.planner").info("planned")
logging.getLogger("blendmesh.host").info("idle")
"""


def test_a_service_process_prints_the_ids_at_the_end_of_its_lines() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROCESS],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    planned, idle = done.stderr.splitlines()
    assert planned.endswith("blendmesh.planner INFO planned [run_id=run-p request_id=req-p]")
    assert idle.endswith("blendmesh.host INFO idle")
