"""A service joining a secured nats-server before its credentials are written (a Procfile
starts every process at once): its refused anonymous login is tried again for a while."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.runtime.nats import access
from services.runtime.nats.login import LoginRefused
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service.host import _open_service_bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

PREFIX = "bmwait"


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    credentials = tmp_path / "server" / "nats-credentials.json"
    server = EmbeddedNats.secured(tmp_path / "nats", credentials, PREFIX)
    url = await server.start()
    await prepare_streams(url, PREFIX, access.login_for(credentials, access.ADMIN))
    try:
        yield url, credentials
    finally:
        await server.stop()


def service_settings(url: str, home: Path) -> Settings:
    home.mkdir(exist_ok=True)
    return Settings(home=home, nats_url=url, prefix=PREFIX, previews=False)


async def test_service_when_credentials_appear_while_it_waits_joins_as_its_role(
    secured: tuple[str, Path], tmp_path: Path
) -> None:
    url, credentials = secured
    settings = service_settings(url, tmp_path / "home")

    async def written_later() -> None:
        await asyncio.sleep(0.8)  # a refusal or two first
        await asyncio.to_thread(shutil.copy, credentials, settings.credentials_path)

    began = time.monotonic()
    writing = asyncio.create_task(written_later())
    bus = await _open_service_bus(settings, "planner", wait=10)
    await writing
    try:
        assert time.monotonic() - began >= 0.8  # it joined once the credentials were there
        assert bus.nc.is_connected
        assert (await bus.js.account_info()).streams >= 1  # the log, as the role sees it
    finally:
        await bus.close()


async def test_service_when_credentials_never_come_gives_up_with_the_servers_refusal(
    secured: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = secured
    settings = service_settings(url, tmp_path / "home")
    began = time.monotonic()
    with pytest.raises(LoginRefused, match="refused an anonymous client") as raised:
        await _open_service_bus(settings, "planner", wait=1.0)
    assert 1.0 <= time.monotonic() - began < 8
    assert "BLENDMESH_NATS_CREDENTIALS" in str(raised.value)


async def test_service_when_its_password_is_wrong_is_refused_at_once(
    secured: tuple[str, Path], tmp_path: Path
) -> None:
    url, credentials = secured
    settings = service_settings(url, tmp_path / "home")
    doc = json.loads(credentials.read_text())
    doc["users"]["planner"] = "not-the-password"
    settings.credentials_path.write_text(json.dumps(doc))
    began = time.monotonic()
    with pytest.raises(LoginRefused, match="refused user 'planner'"):
        await _open_service_bus(settings, "planner", wait=30)
    assert time.monotonic() - began < 5  # not the 30 s wait: a wrong password is final
