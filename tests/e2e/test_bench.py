"""The benchmarks still run against the current code (their figures are not asserted).

Each runs in a small mode: few runs, small scenes, and no part measured twice across
scripts (table.py's executors and load rows are executors.py's and load.py's
measurements, checked there, and executors.py measures one configuration alone), so a
script costs about the meshes and Blenders it must start. They run with previews off, as
every command the tests start does (BLENDMESH_PREVIEWS=0), and grammar.py on a sample:
tests/integration/test_artist_requests_bpy.py executes every artist request on Blender
already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.mark.parametrize(
    ("args", "figure"),
    [
        (["run_latency.py", "--runs", "2"], "ratio mesh / raw bpy at p50:"),
        pytest.param(
            ["executors.py", "--runs", "2", "--only", "as processes, previews off"],
            "speed-up of two executors over one:",
            marks=pytest.mark.slow,
        ),
        pytest.param(
            ["render_frames.py", "--frames", "4", "--size", "32x32", "--samples", "1"],
            "two executors / one:",
            marks=pytest.mark.slow,
        ),
        (["guarantees.py", "--repeat", "1", "--sizes", "8", "24"], "fingerprint"),
        (["inspection.py", "--repeat", "1", "--sizes", "8", "24"], "inspect+store per commit:"),
        (["snapshot.py", "--repeat", "1", "--sizes", "3", "6"], "scene.snapshot / full snapshot:"),
        (["ownership.py", "--runs", "50"], "index speed-up at 50 runs:"),
        (["cancel_look.py", "--looks", "20"], "cancel look p50:"),
        (["gates.py", "--runs", "1", "--sizes", "3", "6"], "gates at 6 objects / at 3:"),
        (["geonodes.py", "--runs", "1"], "ratio mesh / bpy:"),
        (["mcp_latency.py", "--runs", "1"], "ratio blendmesh run / mcp at p50:"),
        (["peer_loop.py", "--runs", "2"], "peer loop, 25 operations, p50:"),
        (
            [
                "table.py",
                "--runs",
                "2",
                "--large",
                "30",
                "--executor-runs",
                "0",
                "--profile-runs",
                "1",
                "--floor-repeat",
                "10",
                "--load-runs",
                "0",
            ],
            "mesh / peer loop at p50:",
        ),
        (
            [
                "table.py",
                "--only",
                "rebuild",
                "--runs",
                "1",
                "--large",
                "30",
                "--profile-runs",
                "1",
                "--rebuilds",
                "2",
            ],
            "audit rebuild events/s / raw JetStream replay events/s",
        ),
        (["load.py", "--clients", "2", "--runs", "2", "--bridges", "2"], "load, one executor:"),
        (["apart.py", "--runs", "2", "--rounds", "1"], "audit apart: run p50"),
        (["grammar.py", "--sample", "5"], "executed correctly:"),
        (["floor.py", "--repeat", "10", "--batch", "3"], "as one atomic batch"),
        (["fsyncs.py", "--runs", "1"], "nats-server fsyncs counted over"),
        (["hops.py", "--runs", "2"], "round trips per run:"),
        (["python_step.py", "--runs", "1"], "ratio warm / direct:"),
        (
            ["commit_timeline.py", "--runs", "1", "--grid", "10", "--props", "20"],
            "SupervisedBridge.verify [Blender CPU",
        ),
        pytest.param(
            ["live_session.py", "--runs", "1", "--skip-big"],
            "ask -> change in the session",
            marks=pytest.mark.slow,
        ),
        (
            [
                "fairness.py",
                "--runs",
                "1",
                "--flood",
                "50",
                "--attacks",
                "files.stage",
                "--shapes",
                "asks",
            ],
            "under a files.stage flood that asks / alone:",
        ),
    ],
)
def test_bench_when_run_small_prints_its_figures(args: list[str], figure: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next((x for x in proc.stdout.splitlines() if figure in x), "")
    assert any(ch.isdigit() for ch in line.split(figure)[-1]), proc.stdout
