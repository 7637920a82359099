"""Joining a NATS server without credentials is never silent, and can be refused.

A server blendmesh did not start (NATS_URL) may admit anyone; then nothing on it tells the
roles apart and every guarantee of docs/adr/0006 and 0007 is off. The warning says so;
``BLENDMESH_REQUIRE_AUTH=1`` turns it into a refusal before anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.runtime.nats import login
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.settings import Settings, SettingsError
from tests.support.meshes import client_mesh

pytestmark = pytest.mark.integration

PREFIX = "bmanon"


@pytest.fixture(autouse=True)
def warned_of_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning is said once per address in a process; a free port this test's server
    gets may be one an earlier test's server had, so what was said before is forgotten."""
    monkeypatch.setattr(login, "_WARNED", set())


@pytest.fixture
async def open_server(tmp_path: Path) -> AsyncIterator[str]:
    """An external server that admits anonymous clients, as a default nats-server does."""
    server = EmbeddedNats(tmp_path / "nats")
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


def settings_for(tmp_path: Path, url: str, **env: str) -> Settings:
    return Settings.from_env(
        {"NATS_URL": url, "BLENDMESH_HOME": str(tmp_path / "home"), "BLENDMESH_PREFIX": PREFIX}
        | env
    )


async def join(settings: Settings) -> None:
    """What ``blendmesh run`` does with NATS_URL set: no mesh of its own, a client bus."""
    async with client_mesh(settings, "test-cli", services=()):
        pass


async def test_join_when_anonymous_warns_naming_what_is_unprotected(
    tmp_path: Path, open_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    await join(settings_for(tmp_path, open_server))
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    warning = next((w for w in warnings if open_server in w), "")
    for unprotected in ("without credentials", "approv", "event log", "KV", "consumers"):
        assert unprotected in warning, warnings
    assert "BLENDMESH_REQUIRE_AUTH" in warning


async def test_join_when_auth_required_and_anonymous_is_refused_saying_what_to_do(
    tmp_path: Path, open_server: str
) -> None:
    settings = settings_for(tmp_path, open_server, BLENDMESH_REQUIRE_AUTH="1")
    with pytest.raises(ConnectionError, match="BLENDMESH_REQUIRE_AUTH") as info:
        await join(settings)
    assert "BLENDMESH_NATS_CREDENTIALS" in str(info.value)


async def test_join_when_credentials_are_in_the_url_is_neither_warned_nor_refused(
    tmp_path: Path, open_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    url = open_server.replace("nats://", "nats://someone:secret@")
    await join(settings_for(tmp_path, url, BLENDMESH_REQUIRE_AUTH="1"))
    assert not [r for r in caplog.records if "without credentials" in r.getMessage()]


@pytest.mark.parametrize(("raw", "required"), [("1", True), ("true", True), ("0", False)])
def test_settings_require_auth_when_set_is_read(raw: str, required: bool) -> None:
    settings = Settings.from_env({"BLENDMESH_REQUIRE_AUTH": raw})
    assert settings.require_auth is required
    assert Settings.from_env({}).require_auth is False


def test_settings_require_auth_when_unreadable_names_the_setting() -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_REQUIRE_AUTH"):
        Settings.from_env({"BLENDMESH_REQUIRE_AUTH": "perhaps"})
