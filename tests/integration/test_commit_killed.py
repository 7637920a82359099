"""An executor killed while it commits a revision leaves no half revision (ADR 0021): the
chunks go first and the manifest last, so a reader finds the old head, or the whole new
revision, never a manifest whose chunks are missing."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.service.host import Bus

ROOT = Path(__file__).resolve().parents[2]
COMMIT = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from services.executor.adapters.scene_store import JetStreamSceneStore
    from services.runtime.service.host import Bus

    async def main() -> None:
        bus = await Bus.open(sys.argv[1], sys.argv[2], "killed-executor")
        store = JetStreamSceneStore(bus.js, bus.prefix)
        await store.commit("killed", Path(sys.argv[3]), "h" * 16, None, 1, owner="ann")
        print("committed", flush=True)

    asyncio.run(main())
    """
)


async def test_commit_when_process_is_killed_midway_leaves_no_revision(
    bus: Bus, nats_url: str, tmp_path: Path
) -> None:
    data = b"BLENDER-v500" + random.Random(11).randbytes(48 * 1024 * 1024)
    blend = tmp_path / "big.blend"
    blend.write_bytes(data)
    store = JetStreamSceneStore(bus.js, bus.prefix)
    child = subprocess.Popen(
        [sys.executable, "-c", COMMIT, nats_url, bus.prefix, str(blend)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
    )
    try:
        stored = 0
        for _ in range(600):  # until some chunks are in, at most 60 s
            await asyncio.sleep(0.1)
            try:
                stored = (await bus.js.stream_info(store.chunks.stream)).state.messages
            except Exception:  # noqa: BLE001 - the store is not made yet
                continue
            if stored >= 20 or child.poll() is not None:
                break
        assert child.poll() is None, "the commit ended before it could be killed"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=10)
    assert stored >= 20  # killed while chunks were going in
    assert await store.head("killed") is None
    assert [r for r in await store.revisions() if r[0] == "killed"] == []
    assert await store.find_revision("killed", 1) is None
    # The next writer commits the scene whole, reusing what the dead one uploaded.
    head = await store.commit("killed", blend, "h" * 16, None, 2, owner="ann")
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(head) == data
