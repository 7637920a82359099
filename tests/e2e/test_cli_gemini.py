"""`blendmesh run` and the planner it picks: the offline notice, and Gemini with a key."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.gemini_fake import FakeGemini, op, plan, running
from tests.support.meshes import BLENDMESH, command_env

NOTICE = "blendmesh: no Gemini key is set, so the offline planner reads this request"


def blendmesh(home: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # Gemini keys: see conftest
        [BLENDMESH, "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=command_env({"BLENDMESH_USER": "ana", **env}),
        stdin=subprocess.DEVNULL,
    )


def result_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with running() as server:
        yield server


def test_run_when_no_key_says_so_once_and_plans_offline(tmp_path: Path) -> None:
    proc = blendmesh(tmp_path, "run", "--json", "add a cube named Box", env={})
    result = result_of(proc)
    assert result["planner"] == "rules" and result["model"] is None
    assert proc.stderr.count(NOTICE) == 1
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("blendmesh: no Gemini key")]
    assert "GEMINI_API_KEY" in line and "docs/grammar.md" in line


def test_run_when_rules_chosen_explicitly_prints_no_notice(tmp_path: Path) -> None:
    proc = blendmesh(tmp_path, "run", "--json", "add a cube", env={"BLENDMESH_PLANNER": "rules"})
    assert result_of(proc)["planner"] == "rules" and NOTICE not in proc.stderr


def test_run_when_gemini_key_set_plans_with_gemini_and_names_the_model(
    tmp_path: Path, fake: FakeGemini
) -> None:
    env = {"GEMINI_API_KEY": "test-key", "BLENDMESH_GEMINI_BASE_URL": fake.url}
    fake.script(plan(op("op01", "object.create", {"primitive": "cube", "name": "Box"})))
    proc = blendmesh(tmp_path, "run", "--json", "--thread", "t-1", "a box please", env=env)
    result = result_of(proc)
    assert result["status"] == "completed" and result["thread_id"] == "t-1"
    assert (result["planner"], result["model"]) == ("gemini", "gemini-2.5-flash")
    assert NOTICE not in proc.stderr and fake.requests[0].api_key == "test-key"

    fake.script(plan(op("op01", "object.transform", {"name": "Box", "location": [0, 0, 2]})))
    shown = blendmesh(tmp_path, "run", "--thread", "t-1", "lift it to 2", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "(gemini gemini-2.5-flash)" in shown.stderr  # the progress line
    assert "completed · gemini gemini-2.5-flash" in shown.stdout  # the receipt table
    assert fake.requests[0].turns[0] == "a box please"  # the thread went along
