"""The add-on tells an unchanged session from a changed one by its content, on each
Blender it supports: Debian's 3.4 (where two saves of one session differ in their bytes,
so a file digest never matched and a pull always refused) and the bpy 5.0 the mesh runs;
the parts it keeps between fingerprints never hide a change a depsgraph update, undo,
redo or a load announces."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "support" / "content_check.py"
CONTENT = ROOT / "blendmesh_addon" / "content.py"

pytestmark = [pytest.mark.slow]


def command(blender: str, out: Path) -> list[str]:
    if blender == "bpy":
        return [sys.executable, str(CHECK), str(CONTENT), str(out)]
    found = shutil.which("blender")
    if found is None:
        pytest.skip("Debian's blender is not installed (.ci/run installs it)")
    return [found, "-b", "--factory-startup", "--python", str(CHECK), "--", str(CONTENT), str(out)]


@pytest.mark.parametrize("blender", ["bpy", "blender"])
def test_fingerprint_when_session_saved_reopened_or_selected_is_unchanged_and_edits_change_it(
    blender: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    proc = subprocess.run(
        command(blender, out), capture_output=True, text=True, timeout=120, cwd=tmp_path,
        stdin=subprocess.DEVNULL, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.read_text())
    assert result["version"][0] == (5 if blender == "bpy" else 3), result
    assert all(result["unchanged"].values()), result["unchanged"]
    assert all(result["changed"].values()), result["changed"]
    assert set(result["changed"]) == {
        "moved", "light", "material", "modifier", "vertex", "hidden", "renamed", "keyframe"
    }  # fmt: skip
    # The parts kept between fingerprints are forgotten when they must be: after each step
    # above and each of these, the kept fingerprint is the one hashed in full.
    assert result["forgets"] == {
        "edit mode": True, "modifier applied": True, "script with update()": True,
        "undo": True, "redo": True,
    }  # fmt: skip
    assert all(result["agreed"].values()), result["agreed"]
    assert result["reused"] == {
        "nothing changed": True, "an object moved": True, "its mesh edited": True
    }  # fmt: skip
    assert len(result["agreed"]) >= 20
