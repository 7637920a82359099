"""The embedded server reloads its user logins once per change, whoever asks first: its
own watcher or a caller (``EmbeddedNats.reload_users``)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from nats.aio.client import Client

from services.runtime.nats import access
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.server.user_registry import Registry
from tests.support.signing import register

PREFIX = "bmreload"


async def test_reload_users_when_asked_at_once_reloads_once_and_admits_the_newcomer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each read of the registry is held a moment, so reads that may overlap do.
    reading, most, guard = 0, 0, threading.Lock()
    changed = Registry.changed

    def held(registry: Registry) -> bool:
        nonlocal reading, most
        with guard:
            reading += 1
            most = max(most, reading)
        time.sleep(0.05)
        try:
            return changed(registry)
        finally:
            with guard:
                reading -= 1

    monkeypatch.setattr(Registry, "changed", held)
    # A watch interval longer than the test: only the callers below reload.
    server = EmbeddedNats.secured(
        tmp_path / "store", tmp_path / "credentials.json", PREFIX, watch_interval=3600
    )
    await server.start()
    try:
        assert not server.admits("newcomer")
        seed = register(tmp_path, "newcomer")
        reloaded = await asyncio.gather(*(server.reload_users() for _ in range(4)))
        assert sorted(reloaded) == [False, False, False, True]
        assert most == 1  # never two reads of the registry at once
        assert server.admits("newcomer")
        nc = Client()
        for _ in range(50):  # the server applies a reload within about a second
            try:
                await nc.connect(
                    server.url,
                    nkeys_seed_str=seed.decode(),
                    inbox_prefix=access.user_inbox_prefix("newcomer"),
                    allow_reconnect=False,
                )
                break
            except Exception:  # noqa: BLE001 - not admitted yet: refused or reset
                await nc.close()
                nc = Client()
                await asyncio.sleep(0.1)
        assert nc.is_connected
        await nc.close()
        assert not await server.reload_users()  # nothing changed since
    finally:
        await server.stop()
