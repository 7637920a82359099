"""The add-on in Debian's Blender (3.4) with its window, under Xvfb, against a mesh that
``blendmesh up`` runs, driven by real input only: xdotool's pointer and key events click
Push, Pull, Ask, Approve and Cancel Run, type requests into the panel's request box and
tokens into its Token field, and press Ctrl-Z and Ctrl-Shift-Z (tests/support/gui_input.py
says how a button is found). Screenshots of the panel at each step that matters are saved
under BLENDMESH_ARTIFACTS (default ``var/artifacts``, which git ignores) for a person to
look at. CI installs ``blender``, ``xvfb`` and ``xdotool`` (.ci/run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.blender_addon import addon_zip
from tests.support.meshes import BLENDMESH, blendmesh_up

GUI_SCRIPT = Path(__file__).parents[1] / "support" / "addon_gui.py"
ARTIFACTS = Path(
    os.environ.get("BLENDMESH_ARTIFACTS") or Path(__file__).parents[2] / "var" / "artifacts"
)
SHOTS = (
    "panel-request-typed.png",
    "panel-request-completed.png",
    "panel-approval-waiting.png",
    "session-after-approval.png",
    "panel-run-cancelled.png",
    "panel-token-refused.png",
    "panel-file-too-large.png",
)
LIMIT = 3 * 1024 * 1024  # the mesh's upload limit here: the startup scene is under 1 MiB
FAILURE = "failure.png"  # the window as it was when a step failed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(480),
    pytest.mark.skipif(
        not (shutil.which("blender") and shutil.which("xvfb-run") and shutil.which("xdotool")),
        reason="Debian's blender, xvfb-run and xdotool are not installed "
        "(apt-get install blender xvfb xdotool)",
    ),
]


def findings(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line[2:]) for line in stdout.splitlines() if line.startswith("@@")]


def test_live_session_in_blender_window_when_driven_by_pointer_and_keys_does_each_flow(
    tmp_path: Path,
) -> None:
    # Blender started on a script that is not there opens its window and waits for ever.
    assert GUI_SCRIPT.is_file(), GUI_SCRIPT
    out = ARTIFACTS / "addon-gui"
    out.mkdir(parents=True, exist_ok=True)
    for shot in (*SHOTS, FAILURE):
        (out / shot).unlink(missing_ok=True)
    home = tmp_path / "artist"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "BLENDER_USER_SCRIPTS": str(home / "scripts"),
        "BLENDER_USER_CONFIG": str(home / "config"),
    }
    mesh_env = {"BLENDMESH_API_TOKENS": "tok-ana=ana", "BLENDMESH_MAX_UPLOAD_BYTES": str(LIMIT)}
    with blendmesh_up(tmp_path / "mesh", "--port", "0", env=mesh_env) as up:
        # The CLI as the same user, on the bus of this mesh: a run made from another door.
        cli = {"command": [BLENDMESH, "--home", str(tmp_path / "mesh")], "nats": up.nats_url}
        xvfb = ["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24"]
        blender = ["blender", "--factory-startup"]
        script = ["--python", str(GUI_SCRIPT), "--", str(addon_zip(tmp_path))]
        args = [up.gateway_url, "tok-ana", str(out), "gui", json.dumps({**cli, "user": "ana"})]
        shown = subprocess.run(
            [*xvfb, *blender, *script, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=420,
        )
    said = findings(shown.stdout)
    assert said and "done" in said[-1], (said[-3:], shown.stderr[-3000:])
    assert "Traceback" not in shown.stdout + shown.stderr, shown.stderr[-3000:]
    steps = {s["step"]: s for s in said if "step" in s}
    # Live: the run's cube is in the open session (no reload), beside the hand-made
    # object, which was pushed first as its own revision; Ctrl-Z and Ctrl-Shift-Z, pressed
    # in the window, take it out and bring it back.
    assert "pushed first" in steps["pushed-first"]["notice"], steps["pushed-first"]
    asked = steps["asked"]
    assert "In your session: revision 3 (add a cube named Box at 0 0 2)" in asked["notice"]
    assert {"Box", "Mine"} <= set(asked["objects"]) and asked["error"] == "", asked
    assert "Box" not in steps["undone"]["objects"] and "Mine" in steps["undone"]["objects"]
    assert {"Box", "Mine"} <= set(steps["redone"]["objects"])
    assert "Tip" in steps["door-ran"]["objects"]  # a run made with the CLI
    assert "Key" in steps["light-came"]["objects"] and steps["light-came"]["error"] == ""
    assert "Box" not in steps["deleted"]["objects"]  # Approve clicked, then live
    cancelled = steps["cancelled"]  # Cancel Run clicked: the run ended, Tip stays
    assert "RUN_CANCELLED" in cancelled["error"] + cancelled["notice"], cancelled
    assert "Tip" in cancelled["objects"], cancelled
    refused = steps["pull-refused"]["error"]
    assert refused.startswith("cannot pull revision 1 of scene gui: it was saved by Blender 5.0")
    assert "Your session is as it was" in refused and "Traceback" not in refused
    # A wrong token typed into the panel is named as refused, not as an unreachable
    # gateway, and the error goes once the right one is typed back.
    wrong = steps["token-refused"]["error"]
    assert "refused the token" in wrong and "cannot reach" not in wrong, wrong
    assert steps["token-answered"]["error"] == "", steps["token-answered"]
    large = steps["too-large"]["error"]  # checked before a byte is sent
    assert f"{LIMIT / 2**20:.1f} MiB" in large and "cannot reach" not in large, large
    [gaps] = [s["frame_gaps"] for s in said if "frame_gaps" in s]
    # Recorded for a person to read (CI's cores are shared, so no bound is asserted here):
    # Blender's main loop, sampled every 20 ms for 9.5 s while the add-on follows, and the
    # add-on's own longest piece of work on its thread meanwhile.
    print(f"add-on following, frame gaps: {gaps}")
    print(
        "from the first step to each step's end, and the looks for buttons so far:",
        {s["step"]: f"{s['at']} s, {s['looks']} looks" for s in steps.values()},
    )
    assert gaps["count"] > 100, gaps  # the loop ran all along: the sampler was not starved
    assert said[-1]["approvals"] == [], said[-1]
    assert [d["status"] for d in said[-1]["door"]] == ["completed"] * 3, said[-1]["door"]
    assert said[-1]["door"][0].get("door") == "cli", said[-1]["door"]
    assert steps["key-came"]["error"] == "", steps["key-came"]  # a keyframe, live in 3.4
    for shot in SHOTS:
        png = (out / shot).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 20_000, shot
