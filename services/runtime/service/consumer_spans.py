"""The consumer loop's spans: one CONSUMER span per handled message, in the message's trace."""

from __future__ import annotations

import contextlib

from nats.aio.msg import Msg
from opentelemetry.trace import Span, SpanKind, StatusCode

from contracts.events import AnyEvent, RunEvent, event_kind
from services.runtime.service import tracing
from services.runtime.service.consumer_spec import Delivery


def failed(span: Span, exc: Exception) -> None:
    span.record_exception(exc)
    span.set_status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}")


def handle_span(
    durable: str, msg: Msg, delivery: Delivery, event: AnyEvent | None
) -> contextlib.AbstractContextManager[Span]:
    """A CONSUMER span ``<durable> handle <event kind>`` in the message's trace."""
    kind = event_kind(event) if event is not None else "undecodable"
    attributes: dict[str, str | int] = {
        "messaging.system": "nats",
        "messaging.operation.type": "process",
        "messaging.destination.name": msg.subject,
        "messaging.consumer.group.name": durable,
        "messaging.nats.stream_sequence": delivery.stream_seq,
        "messaging.nats.delivery_count": delivery.num_delivered,
    }
    if event is not None:
        attributes["blendmesh.event_id"] = attributes["messaging.message.id"] = event.event_id
    if isinstance(event, RunEvent):
        attributes["blendmesh.run_id"] = event.run_id
        attributes["blendmesh.request_id"] = event.request_id
    return tracing.tracer().start_as_current_span(
        f"{durable} handle {kind}",
        context=tracing.extract(msg.headers),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    )
