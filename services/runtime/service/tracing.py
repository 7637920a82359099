"""Tracing: one OpenTelemetry trace per run, across every service (docs/architecture.md).

The W3C ``traceparent`` travels in the NATS headers of every event: the publishers inject
the current context, the consumer loop extracts it and opens the handler's span as its
child. Handlers and domain code never touch headers; they open a child span only for a
step a reader of the trace cares about, such as one operation.

blendmesh keeps its own tracer provider instead of setting OpenTelemetry's global one,
which can be set only once per process: tests install a fresh provider per test. When
nothing is configured, spans go to whatever global provider the host process set up
(none by default, so tracing costs next to nothing), and incoming trace context is still
passed on to the events a handler publishes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context, attach, detach
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from contracts.receipts import Receipt
from services.runtime.service.settings import Settings, SettingsError

if TYPE_CHECKING:  # the SDK is imported only when spans are exported: a command starts faster
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

SERVICE = "blendmesh"

_PROPAGATOR = TraceContextTextMapPropagator()
_GLOBAL = trace.get_tracer(SERVICE)  # follows the global provider, whenever one is set


@dataclass
class _State:
    configured: bool = False
    provider: TracerProvider | None = None
    tracer: trace.Tracer | None = None
    owned: bool = False  # created here, so shut down here


_state = _State()


def configure_tracing(
    settings: Settings, provider: TracerProvider | None = None
) -> TracerProvider | None:
    """Send blendmesh's spans where ``settings.trace_exporter`` says; call once at start.

    A second call changes nothing. ``provider`` replaces whatever was configured: tests
    pass one with an in-memory exporter. Returns the provider in use, or None when spans
    go to the global provider.
    """
    if provider is not None:
        _install(provider, owned=False)
        return provider
    if _state.configured:
        return _state.provider
    exporter = _exporter(settings.trace_exporter)
    if exporter is None:
        _state.configured = True
        return None
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    created = TracerProvider(resource=Resource.create({SERVICE_NAME: SERVICE}))
    # The console is for reading along as spans end; OTLP ships in batches off the loop.
    processor = (
        SimpleSpanProcessor(exporter)
        if isinstance(exporter, ConsoleSpanExporter)
        else BatchSpanProcessor(exporter)
    )
    created.add_span_processor(processor)
    _install(created, owned=True)
    return created


def shutdown_tracing() -> None:
    """Flush and stop the provider configured here; the next configure starts afresh."""
    state = _state
    if state.provider is not None and state.owned:
        state.provider.shutdown()  # flushes the batch processor first
    state.configured, state.provider, state.tracer, state.owned = False, None, None, False


def tracer() -> trace.Tracer:
    """The tracer every blendmesh span comes from."""
    return _state.tracer or _GLOBAL


def inject(headers: dict[str, str]) -> dict[str, str]:
    """Add the current trace context (``traceparent``, ``tracestate``) to ``headers``."""
    _PROPAGATOR.inject(headers)
    return headers


def extract(headers: Mapping[str, str] | None) -> Context:
    """The trace context a message carries; an empty context when it carries none."""
    return _PROPAGATOR.extract(dict(headers or {}))


@contextlib.contextmanager
def continuing(carrier: Mapping[str, str]) -> Iterator[None]:
    """Spans opened inside are children of the trace ``carrier`` names (``traceparent``,
    ``tracestate``): a caller's trace, continued. A malformed one continues nothing."""
    token = attach(extract(carrier))
    try:
        yield
    finally:
        detach(token)


def receipt_attributes(receipt: Receipt) -> dict[str, Any]:
    """Span attributes of one operation's receipt (None values left out)."""
    fields = {
        "operation_id": receipt.operation_id,
        "tool_name": receipt.tool_name,
        "safety_level": receipt.safety_level,
        "status": receipt.status,
        "mcp_call_id": receipt.mcp_call_id,
        "blender_mutation_id": receipt.blender_mutation_id,
        "scene_hash_before": receipt.scene_hash_before,
        "scene_hash_after": receipt.scene_hash_after,
        "error_code": receipt.error_code,
        "duration_ms": receipt.duration_ms,
    }
    return {f"blendmesh.{k}": v for k, v in fields.items() if v is not None}


def _install(provider: TracerProvider, owned: bool) -> None:
    shutdown_tracing()
    _state.configured, _state.provider, _state.owned = True, provider, owned
    _state.tracer = provider.get_tracer(SERVICE)


def _exporter(name: str) -> SpanExporter | None:
    match name:
        case "none":
            return None
        case "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            # stderr: stdout carries `blendmesh run --json` output.
            return ConsoleSpanExporter(out=sys.stderr)
        case "otlp":
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )
            except ImportError:
                raise SettingsError(
                    "BLENDMESH_TRACE=otlp needs the OTLP exporter: pip install 'blendmesh[otlp]'"
                ) from None
            # It reads OTEL_EXPORTER_OTLP_ENDPOINT (and the other OTEL_* settings) itself.
            return OTLPSpanExporter()
    raise SettingsError(f"BLENDMESH_TRACE={name!r} is not a trace exporter")
