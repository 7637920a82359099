"""``blendmesh --help`` and a mistyped command answer before anything heavy is imported, and
``blendmesh run`` on a running mesh imports only what it uses.

Guarded without timing (a busy machine makes timings flaky): a child process runs the
command, or imports the run's modules, and reports which modules it loaded. The SDKs, the
gateway, the NATS client and bpy cost about a second together; the parser needs none of
them. A run joining the mesh in NATS_URL needs the NATS client and the contracts, not the
embedded mesh, the executor's stores or rich (tests/e2e/test_cli_warm_run.py runs one)."""

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
# What a run on the mesh in NATS_URL, printing to a pipe, never needs: the embedded mesh's
# parts, the executor's stores, rich and what draws with it, every SDK and server.
RUN_HEAVY = (
    "google",
    "fastapi",
    "starlette",
    "uvicorn",
    "bpy",
    "mcp",
    "aiosqlite",
    "rich",
    "services.runtime.server.embedded",
    "services.runtime.server.jetstream_watch",
    "services.runtime.service.store_limits",
    "services.executor.client",
    "services.executor.app",
    "services.executor.domain.ports",
    "services.planner.app",
    "services.doors.gateway",
    "services.doors.mcp",
    "services.doors.cli.console",
    "services.doors.cli.tables",
)
# The one adapter a run reads: the rule for a changed exported .blend, which needs only the
# standard library (no store, no I/O of its own).
RUN_ADAPTERS = (
    "services.executor.adapters",
    "services.executor.adapters.exports",
    "services.executor.adapters.heads",
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


def heavy_in(modules: list[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy)]


def run_heavy_in(modules: list[str]) -> list[str]:
    """What a run on a running mesh loaded that it does not use."""
    adapters = [
        m for m in modules if m.startswith("services.executor.adapters") and m not in RUN_ADAPTERS
    ]
    return heavy_in(modules, RUN_HEAVY) + adapters


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


RUN_CHAIN = """
import json, sys, tempfile
from pathlib import Path
import services.doors.cli.commands, services.doors.cli.failures
from services.doors.cli import screen
from services.doors.core import scene_client
from services.runtime.service.settings import Settings
screen.screen(), screen.screen(stderr=True)
settings = Settings.from_env().with_(home=Path(tempfile.mkdtemp()))
assert scene_client.guard_export(settings, "s", None) is False  # the run's guard, as it runs
print(json.dumps(sorted(sys.modules)))
"""


def test_run_modules_when_imported_piped_leave_out_the_mesh_stores_and_rich() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHAIN],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = json.loads(done.stdout)
    assert "services.doors.cli.commands" in modules and "nats" in modules
    assert "services.executor.adapters.exports" in modules
    assert run_heavy_in(modules) == []


def test_run_heavy_list_when_a_scene_command_loads_it_names_what_it_loaded() -> None:
    """The run's guard can fail: the modules a scene listing draws with are in its list."""
    modules = ["services.doors.cli.tables", "rich.console", "services.executor.adapters.tags"]
    modules += [*RUN_ADAPTERS, "services.doors.cli.commands"]
    assert run_heavy_in(modules) == [
        "services.doors.cli.tables",
        "rich.console",
        "services.executor.adapters.tags",
    ]
