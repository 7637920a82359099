"""The metrics module: every series is ``blendmesh_*`` with its declared labels only, and
no hostile label value (a tool name, a status, a consumer) ever makes a series of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.runtime.service import metrics

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = [
    "",
    "other",
    "run_3f2a9c",
    'x"} 1\nblendmesh_runs_total{outcome="completed"} 999',
    "object.create\u202e",
    "a" * 10_000,
    "../../etc/passwd",
    "scene:ana:42",
]


def scrape() -> dict[str, list[dict[str, str]]]:
    """Series name -> the label sets it has now, from the real exposition text."""
    found: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(dict(sample.labels))
    return found


def values(name: str, label: str) -> set[str]:
    return {labels[label] for labels in scrape().get(name, []) if label in labels}


def one_of_each() -> None:
    """Record every series once, so a scrape shows them all."""
    metrics.known_tools(["object.create"])
    metrics.run_ended("completed", None, 0.2)
    metrics.approval_waited(1.0)
    metrics.approvals_waiting(0)
    metrics.stage_handled("planner", "run.requested", 0.01)
    metrics.operation_ran("object.create", "succeeded")
    metrics.executor_busy(0.1)
    metrics.consumer_lag("executor", 0)
    metrics.redelivered("policy")
    metrics.dead_lettered("planner", "undecodable")
    metrics.bridge_restarted("run")


@pytest.mark.clause("000-§correlation.5")
def test_series_when_scraped_are_blendmesh_with_only_declared_labels() -> None:
    one_of_each()
    metrics.approvals_waiting(1)  # an up-down counter shows only once it moved
    metrics.approvals_waiting(-1)
    scraped = scrape()
    for series in metrics.SERIES:
        assert series.name.startswith("blendmesh_")
        for name in series.exported:
            assert name in scraped, f"{name} is not exported"
            for labels in scraped[name]:
                assert set(labels) - {"le"} == set(series.labels), (name, labels)
    declared = {name for s in metrics.SERIES for name in s.exported}
    assert set(scraped) <= declared, set(scraped) - declared


def test_bounded_when_value_outside_the_set_answers_other() -> None:
    assert metrics.bounded("completed", metrics.OUTCOMES) == "completed"
    for hostile in HOSTILE:
        if hostile not in metrics.OUTCOMES:
            assert metrics.bounded(hostile, metrics.OUTCOMES) == "other"


def test_operations_when_tool_name_is_hostile_make_no_new_series() -> None:
    metrics.known_tools(["object.create"])
    metrics.operation_ran("object.create", "succeeded")
    metrics.operation_ran("object.create", "failed")
    for hostile in HOSTILE:
        metrics.operation_ran(hostile, "succeeded")
        metrics.operation_ran("object.create", hostile)
    tools = values("blendmesh_operations_total", "tool")
    statuses = values("blendmesh_operations_total", "status")
    assert "object.create" in tools
    assert "other" in tools
    # Only declared tools (this process's registries) are label values, never what came in.
    assert all(tool == "other" or tool in metrics._tools for tool in tools), tools
    assert not set(HOSTILE) & tools - {"other"}
    assert statuses <= metrics.STATUSES | {"other"}
    assert "other" in statuses


@pytest.mark.clause("000-§correlation.5")
def test_every_label_when_value_is_hostile_lands_in_other() -> None:
    for hostile in HOSTILE:
        metrics.run_ended(hostile, hostile, 1.0)
        metrics.stage_handled(hostile, hostile, 0.1)
        metrics.consumer_lag(hostile, 3)
        metrics.redelivered(hostile)
        metrics.dead_lettered(hostile, hostile)
        metrics.bridge_restarted(hostile)
    allowed = {
        ("blendmesh_runs_total", "outcome"): metrics.OUTCOMES,
        ("blendmesh_runs_total", "error_code"): metrics.ERROR_CODES,
        ("blendmesh_stage_duration_seconds_count", "consumer"): metrics.CONSUMERS,
        ("blendmesh_stage_duration_seconds_count", "event"): metrics.EVENT_KINDS,
        ("blendmesh_consumer_lag_messages", "consumer"): metrics.CONSUMERS,
        ("blendmesh_consumer_redeliveries_total", "consumer"): metrics.CONSUMERS,
        ("blendmesh_dead_letters_total", "consumer"): metrics.CONSUMERS,
        ("blendmesh_dead_letters_total", "reason"): metrics.DEAD_LETTER_REASONS,
        ("blendmesh_bridge_restarts_total", "bridge"): metrics.BRIDGE_ROLES,
    }
    for (name, label), closed in allowed.items():
        seen = values(name, label)
        assert "other" in seen, (name, label)
        assert seen <= set(closed) | {"other"}, (name, label, seen - set(closed))


def test_known_tools_when_registry_is_huge_keeps_at_most_the_limit() -> None:
    tools = metrics._Tools()
    tools.add(f"tool{i}" for i in range(metrics.MAX_TOOLS * 3))
    assert "tool0" in tools
    assert f"tool{metrics.MAX_TOOLS - 1}" in tools
    assert f"tool{metrics.MAX_TOOLS}" not in tools


def test_run_ended_when_clock_went_back_records_zero_not_negative() -> None:
    before = _count_sum("blendmesh_run_duration_seconds", {"outcome": "failed"})
    metrics.run_ended("failed", "TOOL_ERROR", -5.0)
    after = _count_sum("blendmesh_run_duration_seconds", {"outcome": "failed"})
    assert after[0] == before[0] + 1
    assert after[1] == pytest.approx(before[1])


def _count_sum(name: str, labels: dict[str, str]) -> tuple[float, float]:
    count = total = 0.0
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.labels == labels and sample.name == f"{name}_count":
                count = sample.value
            if sample.labels == labels and sample.name == f"{name}_sum":
                total = sample.value
    return count, total


def test_consumers_when_a_service_declares_a_durable_are_all_known() -> None:
    """A new durable consumer must be added to CONSUMERS, or its series read `other`."""
    pattern = re.compile(r'(?:durable=|DURABLE = )"([a-z-]+)"')
    declared = {
        name
        for path in (ROOT / "services").rglob("app.py")
        for name in pattern.findall(path.read_text())
    }
    assert declared, "no durable consumer found: the pattern is out of date"
    assert declared <= metrics.CONSUMERS, declared - metrics.CONSUMERS


def test_consumer_started_when_nothing_failed_yet_shows_its_counters() -> None:
    metrics.consumer_started("guardians")
    scraped = scrape()
    reasons = {
        labels["reason"]
        for labels in scraped["blendmesh_dead_letters_total"]
        if labels["consumer"] == "guardians"
    }
    assert reasons == metrics.DEAD_LETTER_REASONS
    assert {"consumer": "guardians"} in scraped["blendmesh_consumer_redeliveries_total"]
