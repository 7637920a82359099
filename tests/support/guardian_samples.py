"""Sample guardians for the orchestrator's tests and docs/guardians.md's examples.

The product routing table holds nothing broken; tests add ``SAMPLE_ROUTES`` to it with
``monkeypatch.setitem`` (``add_samples``). None of these reads ``repo_path``, so the
documented examples reproduce on any machine with a made-up path.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from services.guardians import GUARDIAN_ROUTING_TABLE

_HERE = __name__

SAMPLE_ROUTES = {
    "sample_pass": f"{_HERE}:passing",
    "sample_fail": f"{_HERE}:failing",
    "sample_raises": f"{_HERE}:raising",
    "sample_exits": f"{_HERE}:exiting",
    "sample_not_dict": f"{_HERE}:not_a_dict",
    "sample_no_tool": f"{_HERE}:without_tool",
    "sample_odd": f"{_HERE}:odd_output",
    "sample_not_callable": f"{_HERE}:NOT_CALLABLE",
    "sample_missing_attribute": f"{_HERE}:no_such_function",
    "sample_missing_module": "tests.guardian_samples_absent:check",
    "sample_broken_module": "tests.support.guardian_samples_broken:check",
    "sample_malformed_entry": f"{_HERE}.passing",
}

NOT_CALLABLE = 42

# Keys out of order, nested values, a tuple-free JSON document: what comes back must be
# this very object.
ODD_OUTPUT: dict[str, Any] = {
    "zeta": [3, {"b": 2, "a": 1}],
    "tool": "sample_odd",
    "alpha": {"nested": {"z": None, "y": [True, False]}, "n": 1.5},
    "passed": True,
}


def passing(repo_path: str) -> dict[str, Any]:
    return {"tool": "sample_pass", "gate": "SAMPLE", "passed": True, "messages": []}


def failing(repo_path: str) -> dict[str, Any]:
    return {
        "tool": "sample_fail",
        "gate": "SAMPLE",
        "passed": False,
        "messages": ["the sample check failed"],
    }


def raising(repo_path: str) -> dict[str, Any]:
    raise RuntimeError("this guardian always raises")


def exiting(repo_path: str) -> dict[str, Any]:
    sys.exit(3)


def not_a_dict(repo_path: str) -> list[str]:
    return ["tool", "sample_not_dict"]


def without_tool(repo_path: str) -> dict[str, Any]:
    return {"gate": "SAMPLE", "passed": True}


def odd_output(repo_path: str) -> dict[str, Any]:
    return ODD_OUTPUT


def add_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """The product table plus ``SAMPLE_ROUTES``, until ``monkeypatch`` undoes it."""
    for guardian_id, target in SAMPLE_ROUTES.items():
        monkeypatch.setitem(GUARDIAN_ROUTING_TABLE, guardian_id, target)
