"""Which tests name which clauses: the suite collected in-process (nothing runs), its marks read."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pytest

# Parametrised cases of one test function check the same clause: the table lists the function.
FAST = {"integration", "e2e"}


@dataclass(frozen=True)
class Marked:
    """A test function and whether it is in the fast subset (not integration, not e2e)."""

    test: str
    fast: bool


def marked(items: Iterable[pytest.Item]) -> dict[str, list[Marked]]:
    """Clause id -> the test functions among ``items`` that name it."""
    by_clause: dict[str, dict[str, Marked]] = {}
    for item in items:
        test = item.nodeid.split("[", 1)[0]
        fast = not any(item.get_closest_marker(m) for m in FAST)
        for mark in item.iter_markers("clause"):
            for cid in mark.args:
                tests = by_clause.setdefault(cid, {})
                # A function run on both buses (tests/flows) is fast when one of its
                # variants is: `-m "not integration"` on its id still runs that one.
                known = tests.get(test)
                tests[test] = Marked(test, fast or (known is not None and known.fast))
    return {cid: sorted(t.values(), key=lambda m: m.test) for cid, t in by_clause.items()}


class _Marks:
    """A pytest plugin that keeps, per clause id, the tests that name it."""

    def __init__(self) -> None:
        self.by_clause: dict[str, list[Marked]] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.by_clause = marked(session.items)


class CollectionFailed(RuntimeError):
    """pytest could not collect the suite; the message carries its report."""


def tests_by_clause(args: Sequence[str] = ()) -> dict[str, list[Marked]]:
    """Collect the suite (``args`` as on pytest's command line) and map clause id -> tests."""
    marks = _Marks()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = pytest.main(["--collect-only", "-q", *args], plugins=[marks])
    if code != pytest.ExitCode.OK:
        raise CollectionFailed(f"pytest --collect-only failed ({code}):\n{out.getvalue()[-4000:]}")
    return marks.by_clause
