"""Correlation ids on log records (spec 000, correlation rule 4).

While a service handles a run's event, every record it logs names the run, the request
(the planner's ``gemini_request_id``) and, inside the executor, the operation, its
``mcp_call_id`` and the ``blender_mutation_id`` it committed. The ids live in a context
variable: asyncio copies the context into each task it creates, so ids set around one
event's handling never reach another's, even when both run at once.

Ids go on log records only, never on metrics (closed labels, ADR 0026).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar
from types import MappingProxyType
from typing import Final

from contracts.events import AnyEvent, RunEvent

# The order a log line names them in: from the widest scope to the narrowest.
IDS: Final = (
    "run_id",
    "request_id",
    "event_id",
    "operation_id",
    "mcp_call_id",
    "blender_mutation_id",
)
MAX_ID_CHARS: Final = 128  # an id longer than this is cut: a log line must stay a line
LOG_FORMAT: Final = "%(asctime)s %(name)s %(levelname)s %(message)s%(correlation)s"

_ids: ContextVar[Mapping[str, str]] = ContextVar(
    "blendmesh_correlation_ids", default=MappingProxyType({})
)
_UNPRINTABLE = re.compile(r"[^\x21-\x7e]")  # spaces and controls would forge fields or lines


def current() -> Mapping[str, str]:
    """The ids that apply here and now."""
    return _ids.get()


@contextlib.contextmanager
def correlated(**ids: str | None) -> Iterator[None]:
    """Add ``ids`` to what applies inside the block; an id given as None or "" is left out.

    Only the names in ``IDS`` are accepted: a misspelt name would silently log nothing.
    """
    unknown = sorted(set(ids) - set(IDS))
    if unknown:
        raise ValueError(f"unknown correlation ids {unknown}; use names from {list(IDS)}")
    merged = {**_ids.get(), **{k: v for k, v in ids.items() if v}}
    token = _ids.set(MappingProxyType(merged))
    try:
        yield
    finally:
        _ids.reset(token)


def ids_of(event: AnyEvent | None) -> dict[str, str | None]:
    """The correlation ids an event carries: every event its id, a run's event its run and
    request, an operation's event its operation, call and mutation."""
    if event is None:
        return {}
    ids: dict[str, str | None] = {"event_id": event.event_id}
    if isinstance(event, RunEvent):
        ids["run_id"] = event.run_id
        ids["request_id"] = event.request_id
    for name in ("operation_id", "mcp_call_id", "blender_mutation_id"):
        value = getattr(event, name, None)
        if isinstance(value, str):
            ids[name] = value
    return ids


def shared_ids(events: Sequence[AnyEvent]) -> dict[str, str | None]:
    """The ids every one of ``events`` has in common: what applies to a batch handled at once."""
    if not events:
        return {}
    first, *rest = (ids_of(e) for e in events)
    return {k: v for k, v in first.items() if all(other.get(k) == v for other in rest)}


def printable(value: str) -> str:
    """``value`` safe to put in a log line: no spaces or controls, at most MAX_ID_CHARS."""
    cut = value[:MAX_ID_CHARS] + ("..." if len(value) > MAX_ID_CHARS else "")
    return _UNPRINTABLE.sub("?", cut)


class CorrelationFilter(logging.Filter):
    """Puts the ids that apply on each record it sees: one attribute per id (None when it
    does not apply, for structured handlers) and ``correlation``, the ids as
    `` run_id=... request_id=...`` or "" (for ``LOG_FORMAT``). Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = _ids.get()
        for name in IDS:
            setattr(record, name, ids.get(name))
        shown = " ".join(f"{name}={printable(ids[name])}" for name in IDS if name in ids)
        record.correlation = f" [{shown}]" if shown else ""
        return True


def install(handlers: Sequence[logging.Handler]) -> None:
    """Attach the filter to ``handlers``, once each.

    On handlers, not on loggers: a logger's filter sees only records logged by that very
    logger, a handler's sees those of every logger below it.
    """
    for handler in handlers:
        if not any(isinstance(f, CorrelationFilter) for f in handler.filters):
            handler.addFilter(CorrelationFilter())


def configure(level: int) -> None:
    """A process's logging: records at ``level`` and above, each line ending with the ids
    that apply. Where logging was set up before (a test runner), only the filter is added."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    install(logging.getLogger().handlers)
