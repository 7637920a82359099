"""``envelope()``: from a run_guardians result to 004 §8's gate envelope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from contracts.gates import GateEnvelope
from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from services.guardians.checks.gate_settings import GateSettings, encode_gate_settings
from services.guardians.envelope import envelope
from tests.support.guardian_samples import add_samples
from tests.support.guardian_scenes import good_scene, scatter_group, write_repo

REPO = "/repos/example"
PRODUCT_IDS = list(GUARDIAN_ROUTING_TABLE)


@pytest.fixture(autouse=True)
def _samples(monkeypatch: pytest.MonkeyPatch) -> None:
    add_samples(monkeypatch)


@pytest.mark.clause("004-§gate-envelope.1")
def test_envelope_when_every_output_passed_is_success(tmp_path: Path) -> None:
    result = run_guardians(write_repo(tmp_path, good_scene()), PRODUCT_IDS)
    assert envelope(result) == GateEnvelope(success=True, failed_gates=[], messages=[])


@pytest.mark.clause("004-§gate-envelope.1")
def test_envelope_when_outputs_fail_lists_gates_once_in_order_with_messages(
    tmp_path: Path,
) -> None:
    scene = replace(good_scene(), node_groups=[scatter_group(connected=False)])
    gates = encode_gate_settings(GateSettings(polygon_budget=10))
    repo = write_repo(tmp_path, scene, gates)
    ids = ["polygon_budget", "output_connected", "names_valid", "polygon_budget"]
    result = run_guardians(repo, ids)
    assert result["ok"] is True  # the orchestrator interprets nothing
    verdict = envelope(result)
    assert verdict.success is False
    assert verdict.failed_gates == ["POLYGON_BUDGET", "OUTPUT_CONNECTED"]
    assert len(verdict.messages) == 3
    assert "over the polygon budget of 10" in verdict.messages[0]
    assert "Group Output geometry socket" in verdict.messages[1]
    assert verdict.messages[2] == verdict.messages[0]


def test_envelope_when_guardian_failed_closed_adds_guardian_failed() -> None:
    result = run_guardians(REPO, ["sample_fail", "sample_raises", "nope", "sample_pass"])
    verdict = envelope(result)
    assert verdict == GateEnvelope(
        success=False,
        failed_gates=["SAMPLE", "GUARDIAN_FAILED"],
        messages=[
            "the sample check failed",
            "guardian sample_raises failed closed: fail-closed: guardian_call_failed",
            "guardian nope failed closed: fail-closed: guardian_unknown",
        ],
    )


def test_envelope_when_guardians_empty_fails_closed() -> None:
    verdict = envelope(run_guardians(REPO, []))
    assert verdict.success is False and verdict.failed_gates == ["GUARDIAN_FAILED"]
    assert verdict.messages == ["guardian  failed closed: fail-closed: guardians_empty"]


def test_envelope_when_repo_path_invalid_fails_closed_saying_so() -> None:
    verdict = envelope(run_guardians("relative", ["sample_pass"]))
    assert verdict.success is False and verdict.failed_gates == ["GUARDIAN_FAILED"]
    assert verdict.messages == ["run_guardians failed closed for repo_path 'relative'"]


def test_envelope_when_output_omits_passed_fails_with_its_gate() -> None:
    result = run_guardians(REPO, ["sample_pass"])
    del result["guardians"][0]["output"]["passed"]
    verdict = envelope(result)
    assert verdict.success is False and verdict.failed_gates == ["SAMPLE"]
    assert verdict.messages == ["SAMPLE failed (guardian sample_pass said no more)"]


def test_envelope_when_failing_output_names_no_gate_uses_unnamed_gate() -> None:
    result = run_guardians(REPO, ["sample_no_tool"])
    result["guardians"][0].update(
        invoked=True, ok=True, fail_closed=False, output={"tool": "x", "passed": False}
    )
    result.update(ok=True, fail_closed=False)
    assert envelope(result).failed_gates == ["UNNAMED_GATE"]


@pytest.mark.parametrize(
    "result",
    [
        {},
        {"ok": True, "fail_closed": False},
        {"ok": True, "fail_closed": False, "guardians": "nope"},
        {"ok": True, "fail_closed": False, "guardians": [42]},
        {"ok": True, "fail_closed": True, "guardians": []},
    ],
)
def test_envelope_when_result_malformed_never_succeeds(result: dict[str, Any]) -> None:
    verdict = envelope(result)
    assert verdict.success is False and "GUARDIAN_FAILED" in verdict.failed_gates
