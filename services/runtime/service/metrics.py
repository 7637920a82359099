"""Metrics: every ``blendmesh_*`` series, its labels and the one place each is recorded.

OpenTelemetry instruments beside the traces (``tracing.py``), read out for Prometheus
through ``opentelemetry-exporter-prometheus`` into a registry of blendmesh's own, so a
process serves exactly its own series (docs/operations.md says what each one means).

Every label value is bounded: it comes from a closed set declared here (contracts'
literals, the consumers blendmesh runs, the tools of the bridge's registry) and anything
outside that set is counted under ``other``. A hostile tool name or status in an event can
therefore never make a new series: run ids, scene ids, users and free text are never
labels at all.

Recording is cheap (an OpenTelemetry aggregation under a lock, no I/O): the exposition
is computed only when ``/metrics`` is scraped.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, get_args

from contracts.events import AnyEvent
from contracts.failures import ErrorCode
from contracts.receipts import ReceiptStatus

if TYPE_CHECKING:  # the SDK loads with the first series counted: a command counts none
    from opentelemetry.metrics import Counter, UpDownCounter

OTHER: Final = "other"  # the label value of anything outside a closed set
NONE: Final = "none"  # the error code of a run that did not fail
MAX_TOOLS = 512  # tool names kept as label values; past this, every new one is `other`
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # Prometheus' text format

RunOutcome = Literal["completed", "failed"]
DeadLetterReason = Literal["undecodable", "rejected", "exhausted"]
BridgeRole = Literal["run", "preview", "render"]

# The durable consumers blendmesh runs (services/*/app.py); a test checks the list is whole.
CONSUMERS: Final = frozenset(
    {"planner", "policy", "policy-expiry", "executor", "guardians", "audit"}
)
OUTCOMES: Final = frozenset(get_args(RunOutcome))
ERROR_CODES: Final = frozenset(get_args(ErrorCode)) | {NONE}
STATUSES: Final = frozenset(get_args(ReceiptStatus))
EVENT_KINDS: Final = frozenset(cls.__struct_config__.tag for cls in get_args(AnyEvent))
DEAD_LETTER_REASONS: Final = frozenset(get_args(DeadLetterReason))
BRIDGE_ROLES: Final = frozenset(get_args(BridgeRole))


@dataclass(frozen=True)
class Series:
    """One metric: its OpenTelemetry instrument name (already the Prometheus family name;
    counters get ``_total`` on export) and the only labels it may carry."""

    name: str
    kind: Literal["counter", "histogram", "gauge", "updown"]
    unit: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()

    @property
    def exported(self) -> tuple[str, ...]:
        """The Prometheus series names a scrape shows for this metric."""
        match self.kind:
            case "counter":
                return (f"{self.name}_total",)
            case "histogram":
                return tuple(f"{self.name}_{end}" for end in ("bucket", "sum", "count"))
        return (self.name,)


# Seconds: a stage is milliseconds to a model's minute; a run may wait an hour for a person.
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
RUN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600, 14400)

RUNS = Series("blendmesh_runs", "counter", "1", "Runs that ended, by outcome and error code",
              ("outcome", "error_code"))  # fmt: skip
RUN_DURATION = Series("blendmesh_run_duration_seconds", "histogram", "s",
                      "Seconds from a run's request to its end, approval waits included",
                      ("outcome",), RUN_BUCKETS)  # fmt: skip
STAGE_DURATION = Series("blendmesh_stage_duration_seconds", "histogram", "s",
                        "Seconds a service took on one event: handler, publishing, ack",
                        ("consumer", "event"), STAGE_BUCKETS)  # fmt: skip
APPROVAL_WAIT = Series("blendmesh_approval_wait_seconds", "histogram", "s",
                       "Seconds a run waited for a person to resolve its approval",
                       (), RUN_BUCKETS)  # fmt: skip
APPROVALS_WAITING = Series("blendmesh_approvals_waiting", "updown", "1",
                           "Runs waiting for a person's approval now")  # fmt: skip
OPERATIONS = Series("blendmesh_operations", "counter", "1",
                    "Operations the executor ran, by tool and receipt status",
                    ("tool", "status"))  # fmt: skip
EXECUTOR_BUSY = Series("blendmesh_executor_busy_seconds", "counter", "s",
                       "Seconds executors spent running approved plans")  # fmt: skip
CONSUMER_LAG = Series("blendmesh_consumer_lag_messages", "gauge", "1",
                      "Messages waiting for a consumer behind the one it just took",
                      ("consumer",))  # fmt: skip
REDELIVERIES = Series("blendmesh_consumer_redeliveries", "counter", "1",
                      "Messages a consumer received again (a nak, a lost ack, a dead worker)",
                      ("consumer",))  # fmt: skip
DEAD_LETTERS = Series("blendmesh_dead_letters", "counter", "1",
                      "Messages given up and written as dead letters, by why",
                      ("consumer", "reason"))  # fmt: skip
BRIDGE_RESTARTS = Series("blendmesh_bridge_restarts", "counter", "1",
                         "Blender bridge processes started again after a crash or a hang",
                         ("bridge",))  # fmt: skip

SERIES: Final = (
    RUNS, RUN_DURATION, STAGE_DURATION, APPROVAL_WAIT, APPROVALS_WAITING, OPERATIONS,
    EXECUTOR_BUSY, CONSUMER_LAG, REDELIVERIES, DEAD_LETTERS, BRIDGE_RESTARTS,
)  # fmt: skip


def bounded(value: str, allowed: Container[str]) -> str:
    """``value`` when it is one of ``allowed``, else ``other``: what keeps a label closed."""
    return value if value in allowed else OTHER


class _Tools:
    """The tool names of the bridge registries this process has seen, at most MAX_TOOLS."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._lock = threading.Lock()

    def add(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                if len(self._names) >= MAX_TOOLS:
                    return
                self._names.add(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names


_tools = _Tools()


def known_tools(names: Iterable[str]) -> None:
    """Declare the tools of the registry the executor runs: only they become ``tool``
    label values (the executor calls this with its catalog at start)."""
    _tools.add(names)


class _Meters:
    """The provider, its Prometheus registry and one instrument per series."""

    def __init__(self) -> None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
        from prometheus_client import CollectorRegistry

        self.registry = CollectorRegistry(auto_describe=False)
        reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self.registry
        )
        views = [
            View(instrument_name=s.name, aggregation=ExplicitBucketHistogramAggregation(s.buckets))
            for s in SERIES
            if s.kind == "histogram"
        ]
        self.provider = MeterProvider(metric_readers=[reader], views=views)
        meter = self.provider.get_meter("blendmesh")
        of = {kind: [s for s in SERIES if s.kind == kind] for kind in ("counter", "updown")}
        self.adders: dict[str, Counter | UpDownCounter] = {
            s.name: meter.create_counter(s.name, unit=s.unit, description=s.help)
            for s in of["counter"]
        } | {
            s.name: meter.create_up_down_counter(s.name, unit=s.unit, description=s.help)
            for s in of["updown"]
        }
        self.histograms = {
            s.name: meter.create_histogram(s.name, unit=s.unit, description=s.help)
            for s in SERIES
            if s.kind == "histogram"
        }
        self.gauges = {
            s.name: meter.create_gauge(s.name, unit=s.unit, description=s.help)
            for s in SERIES
            if s.kind == "gauge"
        }

    def add(self, series: Series, amount: float, **labels: str) -> None:
        self.adders[series.name].add(amount, labels)

    def record(self, series: Series, value: float, **labels: str) -> None:
        self.histograms[series.name].record(value, labels)

    def set(self, series: Series, value: float, **labels: str) -> None:
        self.gauges[series.name].set(value, labels)


@functools.cache
def _meters() -> _Meters:
    """One provider per process: in ``blendmesh up`` every service shares it, so the
    gateway's ``/metrics`` shows the whole mesh."""
    return _Meters()


def exposition() -> bytes:
    """This process's series in Prometheus' text format. It computes every aggregate:
    call it off the event loop (``asyncio.to_thread``)."""
    from prometheus_client import generate_latest

    return generate_latest(_meters().registry)


# The recording functions: every label goes through ``bounded`` here and nowhere else.


def run_ended(outcome: str, error_code: str | None, seconds: float) -> None:
    outcome = bounded(outcome, OUTCOMES)
    code = bounded(error_code or NONE, ERROR_CODES)
    _meters().add(RUNS, 1, outcome=outcome, error_code=code)
    _meters().record(RUN_DURATION, max(seconds, 0.0), outcome=outcome)


def approvals_waiting(change: int) -> None:
    """``+1`` when a run starts waiting for a person, ``-1`` when it stops; at start, the
    count the audit views hold (0 too: the gauge then shows from the start)."""
    _meters().add(APPROVALS_WAITING, change)


def approval_waited(seconds: float) -> None:
    _meters().record(APPROVAL_WAIT, max(seconds, 0.0))


def stage_handled(consumer: str, event: str, seconds: float) -> None:
    _meters().record(
        STAGE_DURATION,
        seconds,
        consumer=bounded(consumer, CONSUMERS),
        event=bounded(event, EVENT_KINDS),
    )


def operation_ran(tool: str, status: str) -> None:
    _meters().add(OPERATIONS, 1, tool=bounded(tool, _tools), status=bounded(status, STATUSES))


def executor_busy(seconds: float) -> None:
    _meters().add(EXECUTOR_BUSY, max(seconds, 0.0))


def consumer_started(consumer: str) -> None:
    """Show a consumer's counters at 0 from its start, so ``increase()`` sees its first
    redelivery or dead letter, and an alert on them has a series to watch."""
    name = bounded(consumer, CONSUMERS)
    _meters().add(REDELIVERIES, 0, consumer=name)
    for reason in sorted(DEAD_LETTER_REASONS):
        _meters().add(DEAD_LETTERS, 0, consumer=name, reason=reason)


def consumer_lag(consumer: str, pending: int) -> None:
    _meters().set(CONSUMER_LAG, pending, consumer=bounded(consumer, CONSUMERS))


def redelivered(consumer: str) -> None:
    _meters().add(REDELIVERIES, 1, consumer=bounded(consumer, CONSUMERS))


def dead_lettered(consumer: str, reason: str) -> None:
    _meters().add(
        DEAD_LETTERS,
        1,
        consumer=bounded(consumer, CONSUMERS),
        reason=bounded(reason, DEAD_LETTER_REASONS),
    )


def bridge_restarted(role: str) -> None:
    _meters().add(BRIDGE_RESTARTS, 1, bridge=bounded(role, BRIDGE_ROLES))
