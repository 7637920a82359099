"""Who may touch the projects' library revisions (ADR 0060): the doors read one (a
download brings a shot's libraries along) and list a project's; only the executor
publishes, so no door can slip a library revision under a project."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from contracts.libraries import MAX_LIBRARY_BYTES
from services.executor.adapters.libraries import StoredLibraries, library_prefix
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.nats import access
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh, role_bus

PREFIX = "bmlibs"
DENIED_WAIT = 0.5  # the server drops a refused request; an allowed one answers in ms


def libraries(js: JetStreamContext) -> StoredLibraries:
    """The library store as the executor's composition root makes it, on ``js``'s login."""
    store = JetStreamSceneStore(js, library_prefix(PREFIX), whole_below=MAX_LIBRARY_BYTES + 1)
    return StoredLibraries(store)


async def test_client_login_when_reading_and_publishing_libraries_may_only_read(
    tmp_path: Path,
) -> None:
    data = b"BLENDER" + bytes(range(256)) * 64
    library = tmp_path / "props.blend"
    library.write_bytes(data)
    async with bare_mesh(Settings(home=tmp_path / "home", prefix=PREFIX)) as mesh:
        async with role_bus(mesh, "executor") as executor:
            assert await libraries(executor.js).publish("personal-ana", "props", library) == 1
            # The same bytes again publish nothing new.
            assert await libraries(executor.js).publish("personal-ana", "props", library) == 1
        async with role_bus(mesh, "client") as client:
            read = tmp_path / "read.blend"
            assert await libraries(client.js).fetch("personal-ana", "props", 1, read)
            assert read.read_bytes() == data
            assert not await libraries(client.js).fetch("personal-bob", "props", 1, read)
            listed = await libraries(client.js).listing("personal-ana")
            assert [(n, r) for n, r, _ in listed] == [("props", 1)]
            objects = access.bucket(library_prefix(PREFIX), "scenes")
            heads = access.bucket(library_prefix(PREFIX), "scene_heads")

            async def forge_object() -> None:
                with pytest.raises(NatsTimeoutError):  # the server drops a refused publish
                    await client.js.publish(
                        f"$O.{objects}.C.forged", b"x", stream=f"OBJ_{objects}",
                        timeout=DENIED_WAIT,
                    )  # fmt: skip

            async def forge_head() -> None:
                with pytest.raises(NatsTimeoutError):
                    await client.js.publish(
                        f"$KV.{heads}.personal-ana.props", b"{}", stream=f"KV_{heads}",
                        timeout=DENIED_WAIT,
                    )  # fmt: skip

            *_, control = await asyncio.gather(
                forge_object(),
                forge_head(),
                client.nc.request(f"$JS.API.STREAM.INFO.OBJ_{objects}", b"", timeout=DENIED_WAIT),
            )
            assert b'"error"' not in control.data, control.data  # answered within the wait
            listed_after = await libraries(client.js).listing("personal-ana")
            assert listed_after == listed
