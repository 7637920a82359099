"""Who may touch revisions stored as chunks (docs/storage.md): the doors read a revision
and set tags; only the executor writes or deletes chunks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.errors import TimeoutError as NatsTimeoutError

from contracts.revisions import chunk_name
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.tags import KvSceneTags
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh, role_bus

PREFIX = "bmchunks"
# The server drops a refused request, and answers an allowed one in milliseconds: the
# client's own reading of the store, asked beside the refused ones, shows it in time.
DENIED_WAIT = 0.5


async def test_client_login_when_reading_tagging_and_deleting_may_only_read_and_tag(
    tmp_path: Path,
) -> None:
    data = b"BLENDER" + bytes(range(256)) * 8_000
    blend = tmp_path / "s.blend"
    blend.write_bytes(data)
    async with bare_mesh(Settings(home=tmp_path / "home", prefix=PREFIX)) as mesh:
        async with role_bus(mesh, "executor") as executor:
            head = await JetStreamSceneStore(executor.js, PREFIX).commit(
                "s", blend, "h" * 16, None, 1, owner="ana"
            )
        async with role_bus(mesh, "client") as client:
            store = JetStreamSceneStore(client.js, PREFIX)
            assert await store.read(head) == data  # the doors' download
            await KvSceneTags(client.js, PREFIX).tag("s", 1, "kept", by="ana")
            assert await KvSceneTags(client.js, PREFIX).of("s") == {"kept": 1}
            names = {i.name for i in await store.chunks.listing()}
            victim = next(iter(names))

            async def forge() -> None:
                with pytest.raises(NatsTimeoutError):  # the server drops a refused publish
                    await client.js.publish(
                        f"$O.{store.chunks.bucket}.C.forged", b"x", stream=store.chunks.stream,
                        timeout=DENIED_WAIT,
                    )  # fmt: skip

            async def purge() -> None:
                with pytest.raises(NatsTimeoutError):
                    await client.nc.request(
                        f"$JS.API.STREAM.PURGE.{store.chunks.stream}", b"{}", timeout=DENIED_WAIT
                    )

            *_, control = await asyncio.gather(
                forge(),
                purge(),
                client.nc.request(
                    f"$JS.API.STREAM.INFO.{store.chunks.stream}", b"", timeout=DENIED_WAIT
                ),
            )
            assert b'"error"' not in control.data, control.data  # answered within the wait
            assert {i.name for i in await store.chunks.listing()} == names
            assert victim == chunk_name("ana", victim.partition("/")[2])
            assert await JetStreamSceneStore(client.js, PREFIX).read(head) == data
