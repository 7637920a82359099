"""The home folder holds every user's prompts, scenes and previews: owner-only (G).

The whole tree of a real mesh's home is checked in test_mesh_limits.py; these tests pin
down ``private_home`` itself. Each restores the process umask it changes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.runtime.service.home import private_home


@pytest.fixture(autouse=True)
def _keep_umask() -> Iterator[None]:
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_home_when_missing_creates_it_and_parents_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "a" / "var"
    private_home(home)
    assert mode(home) == 0o700 and mode(home.parent) == 0o700


def test_private_home_when_existing_and_open_tightens_it(tmp_path: Path) -> None:
    home = tmp_path / "var"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    private_home(home)
    assert mode(home) == 0o700


def test_private_home_when_done_new_files_and_folders_are_owner_only(tmp_path: Path) -> None:
    home = tmp_path / "var"
    private_home(home)
    (home / "audit.sqlite3").write_bytes(b"prompts")
    (home / "scenes").mkdir()
    assert mode(home / "audit.sqlite3") == 0o600
    assert mode(home / "scenes") == 0o700
