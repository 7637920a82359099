"""Spec 003 §2.2, §3.1 and §7.3 as observable facts: the same bytes from any process,
nothing written to repo_path, no network, and an import that loads nothing heavy."""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from tests.support.guardian_scenes import good_scene, write_repo

ROOT = Path(__file__).resolve().parents[3]
PRODUCT_IDS = list(GUARDIAN_ROUTING_TABLE)
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

RUN_AND_PRINT = """
import json, sys
from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from tests.support.guardian_samples import SAMPLE_ROUTES
GUARDIAN_ROUTING_TABLE.update(SAMPLE_ROUTES)
result = run_guardians(sys.argv[1], json.loads(sys.argv[2]))
sys.stdout.write(json.dumps(result, sort_keys=True, separators=(",", ":")))
"""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def run_elsewhere(repo: str, ids: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    proc = subprocess.run(
        [sys.executable, "-c", RUN_AND_PRINT, repo, json.dumps(ids)],
        cwd=cwd,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        timeout=60,
        check=True,
    )
    return proc.stdout


@pytest.mark.clause("003-§freeze.4", "003-§determinism.1")
def test_run_guardians_in_two_processes_gives_identical_bytes(tmp_path: Path) -> None:
    """003 §7.3: byte-identical JSON for identical inputs, whatever the working directory,
    the environment or the clock of the process that runs it."""
    repo = write_repo(tmp_path / "repo", good_scene())
    ids = [*PRODUCT_IDS, "sample_pass", "sample_raises", "nope", "sample_odd", "sample_pass"]
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = run_elsewhere(
        repo,
        ids,
        tmp_path / "one",
        {"TZ": "UTC", "LANG": "C", "PYTHONHASHSEED": "1", "HOME": str(tmp_path / "one")},
    )
    time.sleep(1.1)  # another second on the clock
    second = run_elsewhere(
        repo,
        ids,
        tmp_path / "two",
        {
            "TZ": "Pacific/Kiritimati",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "4242",
            "HOME": str(tmp_path / "two"),
            "BLENDMESH_GATES_FILE": "/elsewhere/gates.toml",
            "USER": "somebody-else",
        },
    )
    assert first == second
    assert json.loads(first)["guardians"][0]["output"]["tool"] == PRODUCT_IDS[0]


def snapshot(folder: Path) -> list[tuple[str, int, int, str]]:
    """Every entry below ``folder``: name, mode, modification time, content hash."""
    rows = []
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
        rows.append((str(path.relative_to(folder)), info.st_mode, info.st_mtime_ns, digest))
    folder_info = folder.lstat()
    rows.append((".", folder_info.st_mode, folder_info.st_mtime_ns, ""))
    return rows


@pytest.mark.clause("003-§non-goals.2")
def test_run_guardians_on_read_only_repo_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """003 §2.2: no write to disk, no mutation of repo state. The folder is read-only, and
    (since root may write anyway) any open for writing fails the test."""
    folder = tmp_path / "repo"
    repo = write_repo(folder, good_scene(), gates=b'{"polygon_budget":5000}')
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    before = snapshot(folder)
    real_open, real_os_open = builtins.open, os.open

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        assert not set(mode) & set("wax+"), f"opened {file} with mode {mode!r}"
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        assert not flags & WRITE_FLAGS, f"os.open({path}) for writing"
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(os, "open", guarded_os_open)
    try:
        result = run_guardians(repo, PRODUCT_IDS)
    finally:
        monkeypatch.undo()
        after = snapshot(folder)
        folder.chmod(0o755)
    assert [entry["invoked"] for entry in result["guardians"]] == [True] * len(PRODUCT_IDS)
    assert result["ok"] is True
    assert after == before


@pytest.mark.clause("003-§non-goals.1")
def test_run_guardians_without_network_runs_every_guardian(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """003 §2.2: no network calls: with sockets refused, every guardian still runs."""
    repo = write_repo(tmp_path, good_scene())

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a guardian reached for the network")

    for name in ("socket", "create_connection", "getaddrinfo", "socketpair"):
        monkeypatch.setattr(socket, name, refuse)
    result = run_guardians(repo, PRODUCT_IDS)
    assert result["ok"] is True
    assert all(entry["invoked"] and entry["ok"] for entry in result["guardians"])


def test_import_services_guardians_loads_nothing_heavy() -> None:
    """Importing the package is cheap: no bus, no MCP SDK, no bpy, no guardian module."""
    code = (
        "import sys, services.guardians as g; "
        "assert callable(g.run_guardians) and g.GUARDIAN_ROUTING_TABLE; "
        "heavy = ('nats', 'bpy', 'mcp', 'msgspec', 'services.runtime', "
        "'services.guardians.checks'); "
        "print([m for m in heavy if m in sys.modules])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert proc.stdout.strip() == "[]"


@pytest.mark.clause("003-§freeze.4")
def test_run_guardians_in_process_matches_the_other_processes(tmp_path: Path) -> None:
    """003 §3.1: the in-process result serialises to the same bytes as a subprocess's."""
    repo = write_repo(tmp_path / "repo", good_scene())
    here = canonical(run_guardians(repo, PRODUCT_IDS)).encode()
    assert run_elsewhere(repo, PRODUCT_IDS, tmp_path, {"TZ": "Asia/Kolkata"}) == here
