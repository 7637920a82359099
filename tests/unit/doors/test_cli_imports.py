"""``blendmesh --help`` and a mistyped command answer before anything heavy is imported.

Guarded without timing (a busy machine makes timings flaky): a child process runs the
command and reports which modules it loaded. The SDKs, the gateway, the NATS client and
bpy cost about a second together; the parser needs none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
# Top-level packages, and blendmesh modules, that no argument parsing may import.
HEAVY = (
    "google",
    "fastapi",
    "starlette",
    "uvicorn",
    "nats",
    "bpy",
    "mcp",
    "networkx",
    "opentelemetry",
    "aiosqlite",
    "msgspec",
    "rich",
    "services.doors.cli.mesh",
    "services.doors.core.client",
    "services.doors.gateway",
    "services.planner",
    "services.executor",
    "services.doors.cli.commands",
)
CHILD = """
import json, sys
from services.doors.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded(*argv: str) -> tuple[int, list[str]]:
    """The exit code of ``blendmesh argv`` and the modules the child had imported."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["modules"]


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize(
    "argv",
    [("--help",), ("run", "--help"), ("scenes", "import", "--help"), ("users", "--help")],
)
def test_help_when_asked_imports_nothing_heavy(argv: tuple[str, ...]) -> None:
    code, modules = loaded(*argv)
    assert code == 0
    assert "argparse" in modules  # the child did parse: the check below could fail
    assert heavy_in(modules) == []


def test_mistyped_command_when_parsed_fails_as_usage_without_heavy_imports() -> None:
    code, modules = loaded("rnu", "add a cube")
    assert code == 2
    assert heavy_in(modules) == []


def test_heavy_list_when_a_command_runs_is_what_it_loads(tmp_path: Path) -> None:
    """The guard can fail: a command that does its work loads what --help must not."""
    code, modules = loaded("--home", str(tmp_path), "users", "list", "--json")
    assert code == 0
    assert "services.doors.cli.commands" in heavy_in(modules)
