"""Where a run's time goes, per stage: a stopwatch around the ports every run crosses,
and the services' handler spans from the run's trace.

Used by bench/table.py on an embedded mesh in the same process. The stopwatch wraps
methods of the adapters' classes (the bridge, the journal, the event pipeline, the scene
store, the leases), so it measures the real code without changing it; calls made
concurrently (the audit service's) are summed, as a profile sums them.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nats.js import JetStreamContext
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.executor.adapters.kv_journal import KvJournal
from services.executor.adapters.leases import KvLeases
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.adapters.supervisor import SupervisedBridge
from services.runtime.nats import history
from services.runtime.service import tracing
from services.runtime.service.publishers import JetStreamPipeline, JetStreamPublisher
from services.runtime.service.settings import Settings

# stage -> (class, method names): the executor's ports, and the bus every service shares.
PORTS: dict[str, tuple[type, tuple[str, ...]]] = {
    "bridge: tools": (SupervisedBridge, ("call_tool",)),
    "bridge: fingerprint": (SupervisedBridge, ("fingerprint",)),
    "bridge: save/load": (SupervisedBridge, ("save", "load", "reset", "render_preview")),
    "bridge: inspect": (SupervisedBridge, ("inspect",)),
    "journal": (KvJournal, ("get", "put", "delete")),
    "leases": (KvLeases, ("acquire", "renew", "release")),
    "scene store": (JetStreamSceneStore, ("head", "commit", "put_inspection", "inspection")),
    "summaries": (KvSceneSummaries, ("put",)),
    "previews": (ObjectStorePreviews, ("put",)),
    "events: pipeline": (JetStreamPipeline, ("send", "settle")),
    "events: publish": (JetStreamPublisher, ("publish",)),
    # Every message stored in any stream (events, KV entries, object chunks), by any
    # service: each one is an fsync under ``sync_interval: always``.
    "durable writes (all)": (JetStreamContext, ("publish", "publish_async")),
}
# stage -> (module, function names): plumbing called through its module's globals.
FUNCTIONS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "history reads": (history, ("read_subject",)),
}
SERVICES = ("planner", "policy", "executor", "guardians", "audit")
PREVIEW_STAGE = "preview worker (off path)"


class Stopwatch:
    """Seconds and calls per stage while ``installed``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.calls: dict[str, int] = collections.defaultdict(int)

    def _wrap(
        self, stage: str, method: Callable[..., Awaitable[Any]]
    ) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(method)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            # The preview worker's bridge (the one run at a lower priority) renders off the
            # run's path: counted apart, or its loads would look like the run's commits.
            where = PREVIEW_STAGE if args and getattr(args[0], "_nice", 0) > 0 else stage
            try:
                return await method(*args, **kwargs)
            finally:
                self.seconds[where] += time.perf_counter() - started
                self.calls[where] += 1

        return timed

    @contextmanager
    def installed(self) -> Iterator[Stopwatch]:
        saved: list[tuple[Any, str, Any]] = []
        for stage, (owner, names) in [*PORTS.items(), *FUNCTIONS.items()]:
            for name in names:
                original = vars(owner)[name]
                saved.append((owner, name, original))
                setattr(owner, name, self._wrap(stage, original))
        try:
            yield self
        finally:
            for cls, name, original in saved:
                setattr(cls, name, original)


class Spans:
    """The handler spans of every service, from an in-memory exporter."""

    def __init__(self, settings: Settings) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        tracing.configure_tracing(settings, provider)

    def per_service(self) -> dict[str, float]:
        """Seconds inside each service's handlers (its ``<durable> handle ...`` spans).

        A consumer in batch mode (audit) handles several events at once, each with its
        own span over the same stretch: a service's time is the stretch its spans cover
        together, not their sum, or a batch of ten would count ten times."""
        spans: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        for span in self.exporter.get_finished_spans():
            durable, _, rest = span.name.partition(" ")
            if rest.startswith("handle ") and span.end_time and span.start_time:
                spans[durable.split("-")[0]].append((span.start_time, span.end_time))
        return {service: covered(found) / 1e9 for service, found in spans.items()}

    def close(self) -> None:
        tracing.shutdown_tracing()


def covered(intervals: list[tuple[int, int]]) -> int:
    """The length of the union of ``(start, end)`` intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


def report(runs: int, end_to_end: float, services: dict[str, float], watch: Stopwatch) -> list[str]:
    """Lines of the per-stage profile, in ms per run."""
    lines = [f"{'stage':30}{'ms/run':>10}{'calls/run':>11}"]
    critical = sum(services.get(s, 0.0) for s in SERVICES if s != "audit")
    lines.append(f"{'end to end':30}{end_to_end / runs * 1e3:10.2f}")
    lines.append(f"{'client + bus transit':30}{max(end_to_end - critical, 0.0) / runs * 1e3:10.2f}")
    for service in SERVICES:
        note = " (off the critical path)" if service == "audit" else ""
        lines.append(f"{service + note:30}{services.get(service, 0.0) / runs * 1e3:10.2f}")
    for stage in [*PORTS, *FUNCTIONS, PREVIEW_STAGE]:
        if watch.calls.get(stage):
            lines.append(
                f"{'  ' + stage:30}{watch.seconds[stage] / runs * 1e3:10.2f}"
                f"{watch.calls[stage] / runs:11.1f}"
            )
    return lines
