"""``@pytest.mark.clause(*ids)``: a test names the spec clauses it checks. An id that is not in
docs/conformance/clauses.toml stops the collection, so a typo cannot hide a clause."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from tests.conformance.clauses import CLAUSES_FILE, ClauseFileError, load


def clause_ids(item: pytest.Item) -> list[str]:
    """The ids every ``clause`` mark on ``item`` names (class and module marks included)."""
    return [cid for mark in item.iter_markers("clause") for cid in mark.args]


def misnamed(marks: Iterable[tuple[str, list[object]]], known: Iterable[str]) -> list[str]:
    """One line per test whose clause mark is empty or names an id that is not a clause."""
    ids = set(known)
    wrong: list[str] = []
    for nodeid, args in marks:
        if not args:
            wrong.append(f"{nodeid}: clause() names no clause")
        wrong += [f"{nodeid}: unknown clause {a!r}" for a in args if a not in ids]
    return wrong


def refuse_unknown_clauses(items: list[pytest.Item]) -> None:
    """Stop the collection when a clause mark is wrong; called from the suite's conftest."""
    try:
        known = load()
    except ClauseFileError as e:
        raise pytest.UsageError(f"{CLAUSES_FILE}: {e}") from e
    marks = [
        (item.nodeid, list(mark.args)) for item in items for mark in item.iter_markers("clause")
    ]
    if wrong := misnamed(marks, known):
        raise pytest.UsageError(
            "clause marks name no clause of docs/conformance/clauses.toml:\n  "
            + "\n  ".join(wrong[:50])
            + "\nfix the id, or add the clause to the file"
        )


def pytest_configure(config: pytest.Config) -> None:
    # For a run outside this repository's pyproject (the marker's own test runs one).
    config.addinivalue_line("markers", "clause(*ids): the spec clauses this test checks")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    refuse_unknown_clauses(items)
