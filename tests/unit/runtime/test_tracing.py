"""Tracing: W3C trace context in and out of headers, and the exporter settings."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from contracts.receipts import Receipt
from services.runtime.service import tracing
from services.runtime.service.settings import Settings, SettingsError

OTLP_MODULE = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


def settings(exporter: str = "none") -> Settings:
    return Settings(home=Path("unused"), trace_exporter=exporter)


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    tracing.shutdown_tracing()
    yield
    tracing.shutdown_tracing()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure_tracing(settings(), provider=provider)
    yield exporter
    provider.shutdown()


def test_inject_when_span_current_adds_traceparent_and_keeps_msg_id(
    exporter: InMemorySpanExporter,
) -> None:
    with tracing.tracer().start_as_current_span("publish") as span:
        headers = tracing.inject({"Nats-Msg-Id": "e1"})
    ctx = span.get_span_context()
    assert headers["Nats-Msg-Id"] == "e1"
    assert headers["traceparent"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")


def test_extract_when_headers_injected_returns_remote_parent(
    exporter: InMemorySpanExporter,
) -> None:
    with tracing.tracer().start_as_current_span("publish") as span:
        headers = tracing.inject({})
    parent = trace.get_current_span(tracing.extract(headers)).get_span_context()
    assert parent.is_remote
    assert (parent.trace_id, parent.span_id) == (
        span.get_span_context().trace_id,
        span.get_span_context().span_id,
    )
    with tracing.tracer().start_as_current_span("handle", context=tracing.extract(headers)):
        pass
    handled = next(s for s in exporter.get_finished_spans() if s.name == "handle")
    assert handled.parent is not None and handled.parent.span_id == parent.span_id
    assert handled.context.trace_id == parent.trace_id


@pytest.mark.parametrize("headers", [None, {}, {"Nats-Msg-Id": "e1"}, {"traceparent": "junk"}])
def test_extract_when_no_valid_context_starts_nothing(headers: dict[str, str] | None) -> None:
    assert not trace.get_current_span(tracing.extract(headers)).get_span_context().is_valid


def test_inject_when_no_span_adds_nothing() -> None:
    assert tracing.inject({"Nats-Msg-Id": "e1"}) == {"Nats-Msg-Id": "e1"}


def test_configure_when_none_installs_no_provider() -> None:
    assert tracing.configure_tracing(settings("none")) is None
    assert tracing.tracer() is not None


def test_configure_when_called_twice_keeps_the_first_provider() -> None:
    first = tracing.configure_tracing(settings("console"))
    assert isinstance(first, TracerProvider)
    assert first.resource.attributes["service.name"] == "blendmesh"
    assert tracing.configure_tracing(settings("console")) is first


def test_configure_when_console_writes_spans_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    tracing.configure_tracing(settings("console"))
    with tracing.tracer().start_as_current_span("blendmesh run"):
        pass
    tracing.shutdown_tracing()
    captured = capsys.readouterr()
    assert '"name": "blendmesh run"' in captured.err and captured.out == ""


def test_configure_when_otlp_not_installed_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, OTLP_MODULE, None)  # import fails as if not installed
    with pytest.raises(SettingsError, match=r"pip install 'blendmesh\[otlp\]'"):
        tracing.configure_tracing(settings("otlp"))


def test_receipt_attributes_when_none_values_leaves_them_out() -> None:
    receipt = Receipt(
        operation_id="a",
        tool_name="object.create",
        safety_level="safe_write",
        status="succeeded",
        mcp_call_id="m1",
        scene_hash_before="h0",
        scene_hash_after="h1",
    )
    assert tracing.receipt_attributes(receipt) == {
        "blendmesh.operation_id": "a",
        "blendmesh.tool_name": "object.create",
        "blendmesh.safety_level": "safe_write",
        "blendmesh.status": "succeeded",
        "blendmesh.mcp_call_id": "m1",
        "blendmesh.scene_hash_before": "h0",
        "blendmesh.scene_hash_after": "h1",
        "blendmesh.duration_ms": 0.0,
    }
