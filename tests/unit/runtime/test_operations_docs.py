"""docs/operations.md and its files: the Grafana dashboard and the Prometheus alerts name
only series blendmesh exports, with their own labels; every series is documented and on
the dashboard; Prometheus' own promtool accepts the expressions and the alerts fire."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from services.runtime.service import metrics

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs" / "operations.md"
FILES = ROOT / "docs" / "operations"
DASHBOARD = FILES / "grafana-dashboard.json"
ALERTS = FILES / "prometheus-alerts.yml"
ALERT_TESTS = FILES / "prometheus-alerts.test.yml"
# Labels Prometheus adds to every scraped series, and a histogram bucket's bound.
ADDED = {"instance", "job", "le"}
EXPORTED = {name: series for series in metrics.SERIES for name in series.exported}


def dashboard() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return found


def dashboard_exprs() -> list[str]:
    return [t["expr"] for panel in dashboard()["panels"] for t in panel["targets"]]


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def problems(expr: str) -> list[str]:
    """What in ``expr`` names a series or a label blendmesh does not export."""
    found = []
    named = re.findall(r"\bblendmesh_\w+", expr)
    if not named:
        found.append(f"names no blendmesh series: {expr}")
    for name in named:
        if name not in EXPORTED:
            found.append(f"{name} is not an exported series")
    for name, matchers in re.findall(r"\b(blendmesh_\w+)\{([^}]*)\}", expr):
        declared = set(EXPORTED[name].labels) | ADDED if name in EXPORTED else set()
        for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers):
            if label not in declared:
                found.append(f"{name} has no label {label}")
    known = {label for name in named if name in EXPORTED for label in EXPORTED[name].labels}
    for grouping in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
        for label in filter(None, (part.strip() for part in grouping.split(","))):
            if label not in known | ADDED:
                found.append(f"groups by {label}, which none of {named} has")
    return found


def test_dashboard_when_read_names_only_exported_series_and_labels() -> None:
    exprs = dashboard_exprs()
    assert exprs
    assert [p for expr in exprs for p in problems(expr)] == []


def test_dashboard_when_read_shows_every_series() -> None:
    shown = {name for expr in dashboard_exprs() for name in re.findall(r"blendmesh_\w+", expr)}
    missing = [s.name for s in metrics.SERIES if not set(s.exported) & shown]
    assert missing == []


def test_dashboard_when_read_is_a_grafana_model_on_a_chosen_prometheus() -> None:
    model = dashboard()
    assert model["uid"] and model["title"] and model["schemaVersion"] >= 30
    variables = [v["name"] for v in model["templating"]["list"] if v["type"] == "datasource"]
    assert variables == ["datasource"]
    ids = [panel["id"] for panel in model["panels"]]
    assert len(ids) == len(set(ids))
    for panel in model["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]


def test_alerts_when_read_name_only_exported_series_and_are_documented() -> None:
    rules = alert_rules()
    assert rules
    text = DOCS.read_text()
    for rule in rules:
        assert problems(rule["expr"]) == [], rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        assert f"`{rule['alert']}`" in text, f"docs/operations.md does not explain {rule['alert']}"


def test_problems_when_expression_is_wrong_names_what() -> None:
    """The check above must be able to fail: a made-up series, label or grouping."""
    assert problems("rate(blendmesh_made_up_total[5m])") == [
        "blendmesh_made_up_total is not an exported series"
    ]
    assert problems('blendmesh_runs_total{run_id="r1"}') == [
        "blendmesh_runs_total has no label run_id"
    ]
    assert problems("sum by (user) (blendmesh_approvals_waiting)") == [
        "groups by user, which none of ['blendmesh_approvals_waiting'] has"
    ]
    assert problems("up == 0") == ["names no blendmesh series: up == 0"]


def test_operations_doc_when_read_explains_every_series_and_its_labels() -> None:
    text = DOCS.read_text()
    for series in metrics.SERIES:
        # A counter by its exported name (``_total``), a histogram by its family's.
        name = series.exported[0] if series.kind == "counter" else series.name
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), "")
        assert row.startswith("|"), f"docs/operations.md has no table row for {series.name}"
        for label in series.labels:
            assert f"`{label}`" in row, (series.name, label)


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool is not installed: apt-get install prometheus (.ci/run does)")
    return found


def test_alerts_when_checked_by_promtool_are_valid_and_fire_as_tested() -> None:
    tool = promtool()
    checked = subprocess.run([tool, "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        [tool, "test", "rules", str(ALERT_TESTS)], capture_output=True, text=True, cwd=FILES
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_dashboard_when_checked_by_promtool_parses_as_promql(tmp_path: Path) -> None:
    tool = promtool()
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:panel_{i}", "expr": expr}
                    for i, expr in enumerate(dashboard_exprs())
                ],
            }
        ]
    }
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run([tool, "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
