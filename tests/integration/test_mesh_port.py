"""A home's embedded mesh listens where it did last time, so what was handed out still works.

A login file (``blendmesh users add NAME --new-key``) and an exported ``NATS_URL`` name the
embedded server's address; a restart on a new port left both pointing nowhere.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from services.doors.cli.mesh import PORT_FILE, Mesh, last_port
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration


def _settings(home: Path) -> Settings:
    return Settings(home=home, nats_url=None, prefix="portcheck", user="ana")


async def _url_of_a_start(home: Path) -> str:
    async with Mesh(_settings(home), services=()) as mesh:
        return mesh.url


async def test_mesh_when_started_again_on_its_home_listens_on_the_same_port(
    tmp_path: Path,
) -> None:
    first = await _url_of_a_start(tmp_path / "home")
    assert await _url_of_a_start(tmp_path / "home") == first


async def test_mesh_when_its_last_port_is_taken_starts_on_a_free_one_and_keeps_that(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    first = await _url_of_a_start(home)
    port = int(first.rsplit(":", 1)[1])
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        second = await _url_of_a_start(home)
    assert second != first
    assert (home / PORT_FILE).read_text().strip() == second.rsplit(":", 1)[1]


async def test_mesh_when_its_last_port_is_taken_after_the_look_still_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The port was free when looked at and taken before nats-server listened on it."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        monkeypatch.setattr("services.doors.cli.mesh.last_port", lambda home: taken)
        url = await _url_of_a_start(tmp_path / "home")
    assert not url.endswith(f":{taken}")


@pytest.mark.parametrize("written", ["", "not a port", "80", "70000", "-1", "9" * 400])
def test_last_port_when_the_file_is_not_a_usable_port_is_none(tmp_path: Path, written: str) -> None:
    (tmp_path / PORT_FILE).write_text(written)
    assert last_port(tmp_path) is None


def test_last_port_when_no_mesh_ever_started_is_none(tmp_path: Path) -> None:
    assert last_port(tmp_path) is None
