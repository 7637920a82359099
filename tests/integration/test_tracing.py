"""One run is one trace: spans from every service, linked through the NATS headers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from contracts import subjects
from contracts.events import AnyEvent, Event, RunRequested
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service import tracing
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.errors import Reject
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = pytest.mark.integration

PROMPT = "add a cube named A, then move A to 1 2 3"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure_tracing(Settings(home=Path("unused")), provider=provider)
    try:
        yield exporter
    finally:
        tracing.shutdown_tracing()
        provider.shutdown()


@pytest.fixture
def mesh_settings(tmp_path: Path) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(home=tmp_path / "home", prefix="bmtrace", user="ana", previews=False)


mesh = mesh_fixture(scope="function")


async def spans_until(
    exporter: InMemorySpanExporter, name: str, timeout: float = 20
) -> Sequence[ReadableSpan]:
    """The finished spans once one called ``name`` is among them (audit lags the client)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        spans = exporter.get_finished_spans()
        if any(s.name == name for s in spans):
            return spans
        await asyncio.sleep(0.05)
    raise AssertionError(f"no span {name!r} in {[s.name for s in exporter.get_finished_spans()]}")


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


async def test_run_when_traced_is_one_trace_across_every_service(
    exporter: InMemorySpanExporter, mesh: tuple[Mesh, Bus]
) -> None:
    request = build_request(user="ana", scene_id="traced", prompt=PROMPT)
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    assert result.status == "completed", result
    # The executor's span ends after the result is out (with previews, after the picture).
    await spans_until(exporter, "executor handle run.approved")
    spans = await spans_until(exporter, "audit handle run.completed")

    root = one(spans, "blendmesh run")
    assert root.parent is None and root.kind is SpanKind.CLIENT
    assert root.attributes is not None
    assert root.attributes["blendmesh.run_id"] == request.run_id
    assert root.attributes["blendmesh.request_id"] == request.request_id
    assert root.attributes["blendmesh.scene_id"] == "traced"
    assert root.attributes["blendmesh.thread_id"] == request.thread_id
    assert root.attributes["blendmesh.status"] == "completed"
    trace_id = root.context.trace_id
    assert {s.context.trace_id for s in spans} == {trace_id}

    handlers = [s for s in spans if s.kind is SpanKind.CONSUMER]
    assert {s.name.split(" handle ")[0] for s in handlers} >= {
        "planner",
        "policy",
        "executor",
        "audit",
    }
    for span in handlers:
        attrs = span.attributes or {}
        assert attrs["messaging.system"] == "nats"
        destination = str(attrs["messaging.destination.name"])
        if destination == f"bmtrace.thread.{request.thread_id}.message":
            continue  # its request as its thread's message (in the trace, checked above)
        assert destination.startswith(f"bmtrace.run.{request.run_id}.")
        assert attrs["blendmesh.run_id"] == request.run_id
        assert attrs["blendmesh.request_id"] == request.request_id
        assert attrs["blendmesh.event_id"] and attrs["messaging.nats.delivery_count"] == 1
        assert span.status.status_code is not StatusCode.ERROR

    # Every span but the root hangs off a span of the same trace.
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        if span is not root:
            assert span.parent is not None and span.parent.span_id in by_id, span.name
            assert span.parent.trace_id == trace_id
    parent = {s.name: by_id[s.parent.span_id].name for s in spans if s.parent is not None}
    assert parent["planner handle run.requested"] == "blendmesh run"
    assert parent["policy handle run.planned"] == "planner handle run.requested"
    assert parent["executor handle run.approved"] == "policy handle run.planned"
    assert parent["planner handle run.executed"] == "executor handle run.approved"
    assert parent["audit handle run.requested"] == "blendmesh run"

    operations = [s for s in spans if s.name.startswith("operation ")]
    assert [s.name for s in sorted(operations, key=lambda s: s.start_time or 0)] == [
        f"operation {r.tool_name}" for r in result.receipts
    ]
    for span, receipt in zip(
        sorted(operations, key=lambda s: s.start_time or 0), result.receipts, strict=True
    ):
        assert by_id[span.parent.span_id].name == "executor handle run.approved"  # type: ignore[union-attr]
        attrs = span.attributes or {}
        assert attrs["blendmesh.operation_id"] == receipt.operation_id
        assert attrs["blendmesh.mcp_call_id"] == receipt.mcp_call_id
        assert attrs["blendmesh.blender_mutation_id"] == receipt.blender_mutation_id
        assert attrs["blendmesh.status"] == "succeeded"
        assert attrs["blendmesh.scene_hash_before"] == receipt.scene_hash_before
        assert attrs["blendmesh.scene_hash_after"] == receipt.scene_hash_after
        # The operation's own events are published inside its span.
        children = {s.name for s in spans if s.parent and s.parent.span_id == span.context.span_id}
        assert children >= {"audit handle run.op_started", "audit handle run.op_succeeded"}


async def test_run_when_console_exporter_configured_completes_and_prints_spans(
    mesh: tuple[Mesh, Bus], capsys: pytest.CaptureFixture[str]
) -> None:
    tracing.configure_tracing(mesh[0].settings.with_(trace_exporter="console"))
    err = ""
    try:
        request = build_request(user="ana", scene_id="console", prompt=PROMPT)
        result = await MeshClient(mesh[1]).run(request, timeout=120)
        for _ in range(200):  # the executor's span ends after the result is out
            err += capsys.readouterr().err
            if '"name": "executor handle run.approved"' in err:
                break
            await asyncio.sleep(0.05)
    finally:
        tracing.shutdown_tracing()
    assert result.status == "completed", result
    err += capsys.readouterr().err
    assert '"name": "blendmesh run"' in err
    assert '"name": "executor handle run.approved"' in err
    assert '"name": "operation object.create"' in err


async def test_handler_when_it_rejects_marks_its_span_failed(
    exporter: InMemorySpanExporter, bus: Bus
) -> None:
    async def handler(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        raise Reject("not for me")

    spec = ConsumerSpec(
        durable="traced", filter_subjects=[subjects.any_run("bmtest", "requested")], handler=handler
    )
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", spec)
    await loop.start()
    try:
        request = RunRequested(
            event_id="e1",
            at=1.0,
            run_id="r1",
            request_id="q",
            thread_id="t",
            user="u",
            scene_id="s",
        )
        with tracing.tracer().start_as_current_span("publish"):
            await bus.publisher.publish(request)
        spans = await spans_until(exporter, "traced handle run.requested")
    finally:
        await loop.stop()
    handled = one(spans, "traced handle run.requested")
    assert handled.status.status_code is StatusCode.ERROR
    assert "not for me" in (handled.status.description or "")
    assert handled.parent is not None
    assert handled.parent.span_id == one(spans, "publish").context.span_id


async def test_approval_when_resolved_continues_the_runs_trace(
    exporter: InMemorySpanExporter, mesh: tuple[Mesh, Bus]
) -> None:
    client = MeshClient(mesh[1])
    made = await client.run(
        build_request(user="ana", scene_id="held", prompt="add a cube named Old")
    )
    assert made.status == "completed", made
    request = build_request(user="ana", scene_id="held", prompt="delete Old")
    waiting = await client.run(request, timeout=120)
    assert waiting.status == "awaiting_confirmation", waiting
    result = await client.resolve(request.run_id, "approve_once", "ana", timeout=120)
    assert result.status == "completed", result
    spans = await spans_until(exporter, "operation object.delete")

    roots = [s for s in spans if s.name == "blendmesh run"]
    root = next(s for s in roots if (s.attributes or {})["blendmesh.run_id"] == request.run_id)
    approval = one(spans, "blendmesh approval")
    assert approval.context.trace_id == root.context.trace_id
    asked = next(s for s in spans if s.context.span_id == approval.parent.span_id)  # type: ignore[union-attr]
    assert asked.name == "policy handle run.planned"
    attrs = approval.attributes or {}
    assert attrs["blendmesh.run_id"] == request.run_id
    assert attrs["blendmesh.decision"] == "approve_once"
    assert attrs["blendmesh.status"] == "completed"
    delete = one(spans, "operation object.delete")
    assert delete.context.trace_id == root.context.trace_id
