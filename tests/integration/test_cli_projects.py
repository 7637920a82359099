"""``blendmesh projects ...`` and ``blendmesh scenes lock|unlock`` against a real mesh's
NATS: each role gets what it may, a non-member is told "no project" / "no scene", a lock
names its holder, and a lead's break of it is an event in the log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from contracts import subjects
from contracts.projects import LockBroken, LockTaken, MemberAdded, SceneFiled
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.nats import access
from services.runtime.nats.history import read_subject
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

PREFIX = "bmprojcli"


@pytest_asyncio.fixture
async def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Mesh]:
    """A mesh's NATS alone, with lea's scene ``s`` and zed's scene ``z``."""
    settings = Settings(home=tmp_path / "home", prefix=PREFIX, user="lea", previews=False)
    async with Mesh(settings, services=()) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "seed", mesh.login(access.ADMIN))
        store = JetStreamSceneStore(bus.js, PREFIX)
        path = tmp_path / "s.blend"
        path.write_bytes(b"BLENDER" + bytes(1000))
        await store.commit("s", path, "s" * 16, None, 1, owner="lea")
        await store.commit("z", path, "z" * 16, None, 1, owner="zed")
        await bus.close()
        monkeypatch.setenv("NATS_URL", mesh.url)
        monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
        yield mesh


async def blendmesh(mesh: Mesh, user: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setenv("BLENDMESH_USER", user)
    return await asyncio.to_thread(cli.main, ["--home", str(mesh.settings.home), *args])


async def test_projects_when_a_lead_builds_one_its_members_see_their_roles(
    seeded: Mesh, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ("projects", "create", "shot010"),
        ("projects", "add-member", "shot010", "ben", "artist"),
        ("projects", "add-member", "shot010", "vic", "viewer"),
        ("projects", "file", "shot010", "s"),
    ):
        assert await blendmesh(seeded, "lea", monkeypatch, *args) == 0, capsys.readouterr()
    capsys.readouterr()
    assert await blendmesh(seeded, "ben", monkeypatch, "projects", "show", "shot010", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["role"] == "artist" and shown["scenes"] == ["s"]
    assert shown["members"] == {"ben": "artist", "lea": "lead", "vic": "viewer"}
    assert await blendmesh(seeded, "vic", monkeypatch, "projects", "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["personal"] == "user:vic"
    assert [(p["project_id"], p["role"]) for p in listed["projects"]] == [("shot010", "viewer")]
    bus = await Bus.open(seeded.url, PREFIX, "read", seeded.login(access.CLIENT))
    try:
        log = await read_subject(bus.js, PREFIX, subjects.project_events(PREFIX, "shot010"))
    finally:
        await bus.close()
    assert [(e.member, e.role) for e in log if isinstance(e, MemberAdded)] == [
        ("ben", "artist"), ("vic", "viewer"),
    ]  # fmt: skip
    assert [e.scene_id for e in log if isinstance(e, SceneFiled)] == ["s"]


async def test_lock_when_taken_blocks_others_and_a_leads_break_is_logged(
    seeded: Mesh, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (
        ("projects", "create", "shot010"),
        ("projects", "add-member", "shot010", "ben", "artist"),
        ("projects", "add-member", "shot010", "vic", "viewer"),
        ("projects", "file", "shot010", "s"),
    ):
        assert await blendmesh(seeded, "lea", monkeypatch, *args) == 0
    lock = ("scenes", "lock", "s", "--note", "animating")
    assert await blendmesh(seeded, "ben", monkeypatch, *lock) == 0
    assert "s: locked by ben until" in capsys.readouterr().out
    assert await blendmesh(seeded, "lea", monkeypatch, "scenes", "lock", "s") == 2
    assert "scene s is locked by ben until" in capsys.readouterr().err
    assert await blendmesh(seeded, "vic", monkeypatch, "scenes", "lock", "s", "--break") == 2
    assert "only a lead breaks locks" in capsys.readouterr().err
    assert await blendmesh(seeded, "lea", monkeypatch, "scenes", "unlock", "s") == 2
    assert "locked by ben, not you" in capsys.readouterr().err
    broke = ("scenes", "lock", "s", "--break", "--note", "review")
    assert await blendmesh(seeded, "lea", monkeypatch, *broke) == 0
    assert "s: broke ben's lock" in capsys.readouterr().out
    assert await blendmesh(seeded, "lea", monkeypatch, "scenes", "lock", "s", "--ttl", "60") == 0
    assert await blendmesh(seeded, "lea", monkeypatch, "scenes", "unlock", "s") == 0
    bus = await Bus.open(seeded.url, PREFIX, "read", seeded.login(access.CLIENT))
    try:
        log = await read_subject(bus.js, PREFIX, subjects.lock_events(PREFIX, "s"))
    finally:
        await bus.close()
    assert [(e.holder, e.by, e.note) for e in log if isinstance(e, LockBroken)] == [
        ("ben", "lea", "review")
    ]
    assert [e.holder for e in log if isinstance(e, LockTaken)] == ["ben", "lea"]
    assert [type(e).__name__ for e in log] == [
        "LockTaken",
        "LockBroken",
        "LockTaken",
        "LockReleased",
    ]


@pytest.mark.parametrize(
    ("user", "args", "said"),
    [
        ("zed", ("projects", "show", "shot010"), "no project shot010"),
        ("zed", ("projects", "add-member", "shot010", "zed", "lead"), "no project shot010"),
        ("zed", ("scenes", "lock", "s"), "no scene s"),
        ("ben", ("projects", "file", "shot010", "z"), "no scene z"),  # zed's scene
        ("ben", ("projects", "add-member", "shot010", "eve", "lead"), "only a lead adds members"),
        ("vic", ("scenes", "lock", "s"), "viewers lock nothing"),
        ("lea", ("projects", "create", "../etc"), "project id '../etc' is not valid"),
        ("lea", ("projects", "create", "shot010"), "project shot010 exists"),
        ("lea", ("scenes", "lock", "s", "--ttl", "999999"), "at most 86400"),
        ("lea", ("scenes", "lock", "s", "--note", "x" * 201), "at most 200 characters"),
        ("lea", ("projects", "add-member", "shot010", "a b", "artist"), "without spaces"),
        ("lea", ("projects", "remove-member", "shot010", "lea"), "last lead of shot010"),
        ("lea", ("scenes", "unlock", "s"), "no lock on scene s"),
    ],
)
async def test_projects_when_asked_wrongly_fail_saying_what_and_how(
    seeded: Mesh,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    user: str,
    args: tuple[str, ...],
    said: str,
) -> None:
    for setup in (
        ("projects", "create", "shot010"),
        ("projects", "add-member", "shot010", "ben", "artist"),
        ("projects", "add-member", "shot010", "vic", "viewer"),
        ("projects", "file", "shot010", "s"),
    ):
        assert await blendmesh(seeded, "lea", monkeypatch, *setup) == 0
    capsys.readouterr()
    assert await blendmesh(seeded, user, monkeypatch, *args) == 2
    assert said in capsys.readouterr().err
