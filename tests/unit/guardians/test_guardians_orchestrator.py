"""Spec 003 V1, clause by clause: ``run_guardians`` validates, routes, aggregates, and
interprets nothing. Sample guardians come from ``tests/support/guardian_samples.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from services.guardians.orchestrator import FAILURE_CODES
from tests.support import guardian_samples
from tests.support.guardian_samples import add_samples
from tests.support.guardian_scenes import good_scene, write_repo

REPO = "/repos/example"
TOP_KEYS = {"tool", "repo_path", "ok", "fail_closed", "guardians"}
ENTRY_KEYS = {"guardian_id", "invoked", "ok", "fail_closed", "output", "details"}
PRODUCT_IDS = list(GUARDIAN_ROUTING_TABLE)  # read before any test adds the samples


@pytest.fixture(autouse=True)
def _samples(monkeypatch: pytest.MonkeyPatch) -> None:
    add_samples(monkeypatch)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def only_entry(result: dict[str, Any]) -> dict[str, Any]:
    assert len(result["guardians"]) == 1
    entry: dict[str, Any] = result["guardians"][0]
    return entry


def assert_failed_closed(entry: dict[str, Any], guardian_id: str, code: str) -> None:
    assert entry == {
        "guardian_id": guardian_id,
        "invoked": False,
        "ok": False,
        "fail_closed": True,
        "output": None,
        "details": code,
    }


# 003 §3.2: repo_path invalid or empty ----------------------------------------------------


@pytest.mark.parametrize("repo_path", ["", "relative/path", " /leading-space", "/a\x00b"])
@pytest.mark.clause("003-§scope.1", "003-§fail-closed.1")
def test_run_guardians_when_repo_path_invalid_fails_closed_with_no_entry(repo_path: str) -> None:
    """003 §3.2: an invalid or empty repo_path -> ok=false, fail_closed=true."""
    result = run_guardians(repo_path, ["sample_pass"])
    assert result == {
        "tool": "run_guardians",
        "repo_path": repo_path,
        "ok": False,
        "fail_closed": True,
        "guardians": [],
    }


@pytest.mark.parametrize("repo_path", [None, 42, ["/repos/example"], b"/repos/example"])
@pytest.mark.clause("003-§scope.1", "003-§fail-closed.1")
def test_run_guardians_when_repo_path_not_a_string_echoes_empty_string(repo_path: Any) -> None:
    """003 §3.2 and §4: a non-string repo_path fails closed and is echoed as a string."""
    result = run_guardians(repo_path, ["sample_pass"])
    assert result["repo_path"] == "" and result["guardians"] == []
    assert (result["ok"], result["fail_closed"]) == (False, True)


@pytest.mark.clause("003-§fail-closed.1")
def test_run_guardians_when_repo_path_invalid_runs_no_guardian(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """003 §3.2: validation comes first; nothing is resolved for an invalid repo_path."""
    monkeypatch.setattr(
        "services.guardians.routing.resolve", lambda target: pytest.fail("resolved")
    )
    assert run_guardians("", ["sample_pass"])["guardians"] == []


# 003 §3.3 guardians_empty -------------------------------------------------------------------


@pytest.mark.parametrize("guardians", [[], None, "sample_pass", ("sample_pass",), {"a": 1}, 3])
@pytest.mark.clause("003-§fail-closed.2")
def test_run_guardians_when_guardians_empty_or_not_a_list_is_guardians_empty(
    guardians: Any,
) -> None:
    """003 §3.3 guardians_empty: `guardians` list is empty or not a list."""
    result = run_guardians(REPO, guardians)
    assert (result["ok"], result["fail_closed"]) == (False, True)
    assert_failed_closed(only_entry(result), "", "fail-closed: guardians_empty")


@pytest.mark.clause("003-§scope.1")
def test_run_guardians_when_both_inputs_invalid_reports_repo_path_first() -> None:
    """003 §3.2: repo_path is checked before guardians."""
    assert run_guardians("", [])["guardians"] == []


# 003 §3.3 guardian_unknown ------------------------------------------------------------------


@pytest.mark.clause("003-§scope.4", "003-§fail-closed.3")
def test_run_guardians_when_id_unknown_is_guardian_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """003 §3.3 guardian_unknown: the id is not in the routing table; nothing is imported."""
    monkeypatch.setattr(
        "services.guardians.routing.resolve", lambda target: pytest.fail("resolved")
    )
    result = run_guardians(REPO, ["no_such_guardian"])
    assert_failed_closed(only_entry(result), "no_such_guardian", "fail-closed: guardian_unknown")
    assert (result["ok"], result["fail_closed"]) == (False, True)


@pytest.mark.parametrize("guardian_id", [None, 7, ["sample_pass"], {"id": "sample_pass"}])
@pytest.mark.clause("003-§scope.4")
def test_run_guardians_when_id_not_a_string_is_unknown_echoed_empty(guardian_id: Any) -> None:
    """003 §3.3 guardian_unknown and §4 (guardian_id is a string): a non-string id."""
    result = run_guardians(REPO, [guardian_id, "sample_pass"])
    assert_failed_closed(result["guardians"][0], "", "fail-closed: guardian_unknown")
    assert result["guardians"][1]["ok"] is True


# 003 §3.3 guardian_import_failed -------------------------------------------------------------


@pytest.mark.parametrize(
    "guardian_id",
    [
        "sample_missing_module",  # the module does not exist
        "sample_broken_module",  # the module raises while it is imported
        "sample_missing_attribute",  # getattr fails
        "sample_not_callable",  # the callable check fails
        "sample_malformed_entry",  # the entry is not "module:callable"
    ],
)
@pytest.mark.clause("003-§scope.5")
def test_run_guardians_when_guardian_does_not_resolve_is_guardian_import_failed(
    guardian_id: str,
) -> None:
    """003 §3.3 guardian_import_failed: package import, getattr, or callable check failed."""
    result = run_guardians(REPO, [guardian_id])
    assert_failed_closed(only_entry(result), guardian_id, "fail-closed: guardian_import_failed")
    assert (result["ok"], result["fail_closed"]) == (False, True)


# 003 §3.3 guardian_call_failed ---------------------------------------------------------------


@pytest.mark.parametrize("guardian_id", ["sample_raises", "sample_exits"])
@pytest.mark.clause("003-§scope.6")
def test_run_guardians_when_guardian_raises_is_guardian_call_failed(guardian_id: str) -> None:
    """003 §3.3 guardian_call_failed: the callable raised (sys.exit included)."""
    result = run_guardians(REPO, [guardian_id])
    assert_failed_closed(only_entry(result), guardian_id, "fail-closed: guardian_call_failed")


@pytest.mark.clause("003-§scope.6", "003-§fail-closed.5")
def test_run_guardians_when_artifact_missing_is_guardian_call_failed_for_every_guardian(
    tmp_path: Path,
) -> None:
    """003 §3.3 guardian_call_failed: a folder without inspection.json never passes."""
    ids = PRODUCT_IDS
    result = run_guardians(str(tmp_path), ids)
    assert [e["details"] for e in result["guardians"]] == [
        "fail-closed: guardian_call_failed"
    ] * len(ids)
    assert (result["ok"], result["fail_closed"]) == (False, True)


# 003 §3.3 guardian_output_invalid -------------------------------------------------------------


@pytest.mark.parametrize("guardian_id", ["sample_not_dict", "sample_no_tool"])
@pytest.mark.clause("003-§scope.7")
def test_run_guardians_when_output_invalid_is_guardian_output_invalid(guardian_id: str) -> None:
    """003 §3.3 guardian_output_invalid: the output is not a dict or lacks "tool"."""
    result = run_guardians(REPO, [guardian_id])
    assert_failed_closed(only_entry(result), guardian_id, "fail-closed: guardian_output_invalid")


@pytest.mark.clause("003-§fail-closed.6")
def test_failure_codes_are_exactly_the_five_of_the_spec() -> None:
    """003 §3.3: the complete set of deterministic failure codes."""
    assert FAILURE_CODES == (
        "fail-closed: guardians_empty",
        "fail-closed: guardian_unknown",
        "fail-closed: guardian_import_failed",
        "fail-closed: guardian_call_failed",
        "fail-closed: guardian_output_invalid",
    )


# 003 §2.1 success, §3.2 orchestrator-owned ok, §7.3 verbatim ---------------------------------


@pytest.mark.clause("003-§scope.8", "003-§scope.3")
def test_run_guardians_when_guardian_succeeds_embeds_output_and_says_ok() -> None:
    """003 §2.1: invoked=true, ok=true, fail_closed=false, output=<verbatim output>."""
    result = run_guardians(REPO, ["sample_pass"])
    assert only_entry(result) == {
        "guardian_id": "sample_pass",
        "invoked": True,
        "ok": True,
        "fail_closed": False,
        "output": guardian_samples.passing(REPO),
        "details": "ok",
    }
    assert (result["ok"], result["fail_closed"]) == (True, False)


@pytest.mark.clause("003-§fail-closed.4", "003-§non-goals.3")
def test_run_guardians_when_output_says_failed_entry_is_still_ok() -> None:
    """003 §3.2: ok/fail_closed are orchestrator-owned, never read from the output."""
    entry = only_entry(run_guardians(REPO, ["sample_fail"]))
    assert entry["output"]["passed"] is False
    assert (entry["invoked"], entry["ok"], entry["fail_closed"]) == (True, True, False)


@pytest.mark.clause("003-§non-goals.3", "003-§scope.8")
def test_run_guardians_when_output_has_odd_order_embeds_the_very_object() -> None:
    """003 §7.3: outputs embedded verbatim: the same object, key order and values kept."""
    before = canonical(guardian_samples.ODD_OUTPUT)
    order = list(guardian_samples.ODD_OUTPUT)
    entry = only_entry(run_guardians(REPO, ["sample_odd"]))
    assert entry["output"] is guardian_samples.ODD_OUTPUT
    assert list(entry["output"]) == order == ["zeta", "tool", "alpha", "passed"]
    assert canonical(entry["output"]) == before
    assert json.dumps(entry["output"]) == json.dumps(guardian_samples.ODD_OUTPUT)


# 003 §4.1 ordering, §7.1 aggregation, §4 / §7.4 exact keys -----------------------------------


@pytest.mark.clause("003-§scope.2", "003-§output-schema.3")
def test_run_guardians_when_ids_repeat_keeps_input_order_and_duplicates() -> None:
    """003 §4.1: the guardians array preserves the input order; no sorting, no dedup."""
    ids = ["sample_pass", "zzz_unknown", "sample_fail", "aaa_unknown", "sample_pass"]
    result = run_guardians(REPO, ids)
    assert [entry["guardian_id"] for entry in result["guardians"]] == ids


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["sample_pass"], (True, False)),
        (["sample_pass", "sample_fail", "sample_odd"], (True, False)),
        (["sample_pass", "sample_raises"], (False, True)),
        (["sample_no_tool", "sample_pass"], (False, True)),
        (["nope", "nope"], (False, True)),
    ],
)
@pytest.mark.clause("003-§freeze.1", "003-§freeze.2", "003-§fail-closed.3")
def test_run_guardians_aggregates_per_section_7_1(
    ids: list[str], expected: tuple[bool, bool]
) -> None:
    """003 §7.1: ok = all(r.ok); fail_closed = (not ok) or any(r.fail_closed)."""
    result = run_guardians(REPO, ids)
    entries = result["guardians"]
    ok = all(entry["ok"] for entry in entries)
    assert (result["ok"], result["fail_closed"]) == expected
    assert result["ok"] == ok
    assert result["fail_closed"] == ((not ok) or any(entry["fail_closed"] for entry in entries))


@pytest.mark.parametrize(
    ("repo_path", "ids"),
    [
        (REPO, ["sample_pass", "nope", "sample_raises", "sample_not_dict", "sample_odd"]),
        (REPO, []),
        ("", ["sample_pass"]),
    ],
)
@pytest.mark.clause("003-§output-schema.1", "003-§output-schema.2", "003-§freeze.5", "003-§scope.3")
def test_run_guardians_keys_are_exactly_those_of_section_4(repo_path: str, ids: list[str]) -> None:
    """003 §4 and §7.4: exactly the top-level keys and guardians[] item keys, typed."""
    result = run_guardians(repo_path, ids)
    assert set(result) == TOP_KEYS and result["tool"] == "run_guardians"
    assert isinstance(result["repo_path"], str)
    for entry in result["guardians"]:
        assert set(entry) == ENTRY_KEYS
        assert isinstance(entry["guardian_id"], str) and isinstance(entry["details"], str)
        assert all(isinstance(entry[k], bool) for k in ("invoked", "ok", "fail_closed"))
        assert entry["output"] is None or isinstance(entry["output"], dict)
        assert entry["details"] == "ok" or entry["details"] in FAILURE_CODES


@pytest.mark.clause("003-§determinism.1")
def test_run_guardians_when_called_twice_gives_identical_results(tmp_path: Path) -> None:
    """003 §3.1: for identical inputs, identical output."""
    repo = write_repo(tmp_path, good_scene())
    ids = [*PRODUCT_IDS, "sample_pass", "nope"]
    assert canonical(run_guardians(repo, ids)) == canonical(run_guardians(repo, ids))


@pytest.mark.clause("003-§freeze.3")
def test_routing_table_entries_all_resolve_and_name_themselves(tmp_path: Path) -> None:
    """003 §7.2: a static table; every product entry imports, and its output's tool is its id."""
    assert PRODUCT_IDS and not any(i.startswith("sample_") for i in PRODUCT_IDS)
    result = run_guardians(write_repo(tmp_path, good_scene()), PRODUCT_IDS)
    assert result["ok"] is True
    for entry in result["guardians"]:
        assert entry["output"]["tool"] == entry["guardian_id"]
