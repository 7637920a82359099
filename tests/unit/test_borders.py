"""The borders in pyproject.toml hold for modules nobody has written yet.

Each probe is an import a newcomer might add on their first day: a door reaching into the
executor, a handler talking to NATS, a domain module starting a process. The probes go into
a copy of the tree, so import-linter judges them exactly as CI would judge a commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# module path -> (the line it gains, the contract that must break)
PROBES = {
    "services/doors/gateway/probe_runner.py": (
        "import services.executor.domain.runner",
        "The executor's insides are its own",
    ),
    "services/doors/cli/probe_policy.py": (
        "from services.policy import engine",
        "Policy's insides are its own",
    ),
    "services/executor/domain/probe_process.py": (
        "import subprocess",
        "Domain logic does no I/O of its own",
    ),
    "services/bridge/probe_bus.py": (
        "from services.runtime.nats import bus",
        "The bridge runs inside Blender",
    ),
    "services/runtime/nats/probe_server.py": (
        "from services.runtime.server import embedded",
        "The runtime's rooms are layered",
    ),
    "services/bridge/scene/probe_tool.py": (
        "from services.bridge.tools import objects",
        "The bridge's rooms are layered",
    ),
    "services/probe_loose.py": (
        "from services.doors.core import client",
        "The doors' core is theirs alone",
    ),
}
# An existing handler gains a NATS import: handlers stay free of I/O.
HANDLER = ("services/audit/handlers.py", "import nats", "Domain logic does no I/O of its own")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the copy, ahead of the installed tree
    command = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", command, "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for package in ("contracts", "services"):
        shutil.copytree(
            ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return copy


def test_the_tree_as_it_is_keeps_every_border(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.parametrize("path", sorted(PROBES))
def test_a_new_module_reaching_across_a_border_breaks_a_contract(tree: Path, path: str) -> None:
    line, contract = PROBES[path]
    probe = tree / path
    probe.write_text(f'"""A probe."""\n\n{line}\n')
    try:
        result = _lint(tree)
    finally:
        probe.unlink()
    assert result.returncode != 0
    broken = result.stdout[result.stdout.index("Broken contracts") :]
    assert contract in broken
    assert path[: -len(".py")].replace("/", ".") in broken


def test_a_handler_that_imports_nats_breaks_a_contract(tree: Path) -> None:
    path, line, contract = HANDLER
    handler = tree / path
    kept = handler.read_text()
    handler.write_text(kept + f"\n{line}  # a probe\n")
    try:
        result = _lint(tree)
    finally:
        handler.write_text(kept)
    assert result.returncode != 0
    assert contract in result.stdout[result.stdout.index("Broken contracts") :]
