"""``blendmesh scenes tag|untag|tags|gc`` against a real mesh's NATS: a user tags only their
own scene's existing revisions, and gc keeps the policy's last N plus the tagged ones."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.nats import access
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREFIX = "bmkeep"


@pytest_asyncio.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[Mesh]:
    """A mesh's NATS alone, with ana's scene ``s`` at revision 3 and bob's scene ``b``."""
    settings = Settings(home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False)
    async with Mesh(settings, services=()) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "seed", mesh.login(access.ADMIN))
        store = JetStreamSceneStore(bus.js, PREFIX)
        head = None
        for n in range(3):
            path = tmp_path / f"s{n}.blend"
            path.write_bytes(b"BLENDER" + bytes([n]) * 100_000)
            head = await store.commit("s", path, f"{n}" * 16, head, 1, owner="ana")
        await store.commit("b", path, "b" * 16, None, 1, owner="bob")
        await bus.close()
        yield mesh


def blendmesh(mesh: Mesh, *args: str) -> int:
    return cli.main(["--home", str(mesh.settings.home), *args])


@pytest.fixture
def as_ana(seeded: Mesh, monkeypatch: pytest.MonkeyPatch) -> Mesh:
    monkeypatch.setenv("NATS_URL", seeded.url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    return seeded


async def test_tag_then_gc_when_keep_is_one_keeps_the_head_and_the_tagged_revision(
    as_ana: Mesh, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await asyncio.to_thread(blendmesh, as_ana, "scenes", "tag", "s", "1", "first-look") == 0
    assert "tag first-look keeps revision 1" in capsys.readouterr().out
    assert await asyncio.to_thread(blendmesh, as_ana, "scenes", "tags", "s", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"first-look": 1}
    monkeypatch.setenv("BLENDMESH_KEEP_REVISIONS", "1")
    assert await asyncio.to_thread(blendmesh, as_ana, "scenes", "gc", "--json") == 0
    got = json.loads(capsys.readouterr().out)
    assert got["revisions"] == 1 and got["chunks"] == 0  # revision 2; chunks wait an hour
    assert await asyncio.to_thread(blendmesh, as_ana, "scenes", "history", "s", "--json") == 0
    assert [e["revision"] for e in json.loads(capsys.readouterr().out)] == [1, 3]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("tag", "s", "9", "x"), "scene s has no revision 9"),
        (("tag", "b", "1", "x"), "no scene b"),  # bob's: ana may not tag it
        (("tag", "s", "1", "not.a.name"), "tag name 'not.a.name' is not valid"),
        (("untag", "s", "never"), "scene s has no tag never"),
        (("tags", "b"), "no scene b"),
    ],
)
async def test_tag_commands_when_wrong_fail_saying_what_and_how(
    as_ana: Mesh, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    assert await asyncio.to_thread(blendmesh, as_ana, "scenes", *args) != 0
    assert said in capsys.readouterr().err.replace("\n", " ")
