"""``blendmesh scenes`` (list, show, history, import; diff and review in ``changes.py``),
``blendmesh revert`` and the guard that keeps ``blendmesh run`` from overwriting an
exported .blend a person changed.

Import and revert are runs: they print and exit like ``blendmesh run`` (3 while one waits
for approval: ``blendmesh approve RUN_ID``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from contracts.events import RunRequested
from contracts.receipts import RunResult
from contracts.scene_report import report_lines
from services.doors.cli.args import ADOPT, DISCARD
from services.doors.cli.common import EXIT_OK, connected, progress, report
from services.doors.cli.mesh import Mesh
from services.doors.cli.screen import rich
from services.doors.core import scene_client
from services.doors.core.client import ClientError, MeshClient, OnEvent
from services.doors.core.scene_client import Choice, SceneDoor
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

# `blendmesh run` imports this module for its guard, and prints without rich when piped;
# the tables the scene commands draw import rich where they are drawn.
if TYPE_CHECKING:
    from services.doors.cli.screen import Screen
    from services.doors.cli.tables import Column
    from services.doors.core.shot_files import Shot


def _json(value: Any) -> None:
    sys.stdout.write(msgspec.json.encode(value).decode() + "\n")


def guard_export(args: argparse.Namespace, settings: Settings) -> bool:
    """Before a run is even planned: True when the changed exported file must be adopted
    (imported) first; refuses a changed file when neither --adopt nor --discard was given."""
    choice: Choice | None = "adopt" if args.adopt else "discard" if args.discard else None
    words = (f"`blendmesh run {ADOPT}`", f"`{DISCARD}`")
    return scene_client.guard_export(settings, args.scene, choice, words)


async def adopt(
    args: argparse.Namespace,
    settings: Settings,
    client: MeshClient,
    err: Screen,
    request: RunRequested,
) -> Any:
    """Import the changed exported file before the run; the import's result when it did
    not complete (it waits for approval, or failed), else None. An import that waits
    carries ``request``: ``blendmesh approve`` runs it once the import completed."""

    door = SceneDoor(client.bus, settings)
    path = scene_client.exported(settings).path(args.scene)
    with path.open("rb") as file:  # staged a chunk at a time, never read whole
        imported = await door.import_request(
            settings.user, args.scene, file, path.name, pre_approved=args.approve
        )
    result = await client.run(imported, progress(err, args.json), args.timeout)
    if result.status == "awaiting_confirmation":
        carried = _carried(settings, result.run_id)
        carried.parent.mkdir(parents=True, exist_ok=True)
        carried.write_bytes(msgspec.json.encode(request))
        err.print(
            f"blendmesh: your request runs once the import is approved: "
            f"`blendmesh approve {result.run_id}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return None if result.status == "completed" else result


async def _gathered(path: Path, limit: int) -> Shot:
    """The shot at ``path`` and the libraries it links, ready to stage. A file the store
    would refuse is refused before a mesh starts for it: a person hears at once that it is
    no .blend, too large, or links a library that is missing."""
    from services.doors.core import shot_files

    try:
        with path.open("rb") as file:
            await asyncio.to_thread(scene_client.check_upload, file, path.name, limit)
        return await asyncio.to_thread(shot_files.gather, path)
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from None
    except shot_files.bat.exceptions.BlendFileError as exc:
        raise ClientError(f"cannot read the libraries {path.name} links: {exc}") from None


def _carried(settings: Settings, import_run_id: str) -> Path:
    return settings.home / "carried" / f"{import_run_id}.json"


async def after_import(
    settings: Settings,
    resolved: RunResult,
    client: MeshClient,
    on_event: OnEvent,
    timeout: float,
    err: Screen,
) -> RunResult:
    """The result of the request an adopted import carried, run now that the import
    completed; ``resolved`` itself when it carried none or still waits."""
    carried = _carried(settings, resolved.run_id)
    if resolved.status == "awaiting_confirmation" or not carried.exists():
        return resolved
    request = msgspec.json.decode(carried.read_bytes(), type=RunRequested)
    carried.unlink(missing_ok=True)
    if resolved.status != "completed":
        err.print(
            f"blendmesh: the import did not complete, so your request did not run: "
            f"{request.prompt or 'the plan'}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return resolved
    return await client.run(msgspec.structs.replace(request, at=time.time()), on_event, timeout)


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    if args.command == "scenes" and args.scenes_command in ("gc", "tag", "untag", "tags"):
        from services.doors.cli import (
            retention as cli_retention,  # retention by hand, as the mesh's admin
        )

        return await cli_retention.dispatch(args, settings, rich(out))
    if args.command == "scenes" and args.scenes_command in ("diff", "review"):
        from services.doors.cli import changes as cli_changes

        return await cli_changes.dispatch(args, settings, out)
    if args.command == "scenes" and args.scenes_command == "export":
        from services.doors.cli import looks as cli_looks

        return await cli_looks.export(args, settings, out, err)
    if args.command == "scenes" and args.scenes_command in ("lock", "unlock"):
        from services.doors.cli import projects as cli_projects

        return await cli_projects.dispatch(args, settings, rich(out))
    services = tuple(Mesh.all_services())
    if args.command == "revert":
        async with connected(settings, services) as bus:
            request = await SceneDoor(bus, settings).revert_request(
                settings.user, args.scene, args.revision, pre_approved=args.approve
            )
            result = await MeshClient(bus).run(request, progress(err, args.json))
        return report(result, args.json, out)
    if args.scenes_command == "import":
        shot = await _gathered(args.file, settings.max_upload_bytes)
        try:
            file = shot.file.open("rb")  # streamed to the store from here, never read whole
        except OSError as exc:
            shot.close()
            raise ClientError(f"cannot read {args.file}: {exc.strerror}") from None
        with file, contextlib.closing(shot):
            async with connected(settings, services) as bus:
                request = await SceneDoor(bus, settings).import_request(
                    settings.user,
                    args.scene,
                    file,
                    args.file.name,
                    pre_approved=args.approve,
                    libraries=shot.libraries,
                )
                result = await MeshClient(bus).run(request, progress(err, args.json))
        return report(result, args.json, out)
    from services.doors.cli import console as show
    from services.doors.cli.tables import fitted_table, request_texts

    async with connected(settings, ()) as bus:
        door = SceneDoor(bus, settings)
        match args.scenes_command:
            case "show":
                summary = await door.show(args.scene, settings.user)
                _json(summary) if args.json else _lines(out, report_lines(summary))
            case "history":
                entries = await door.history(args.scene, settings.user)
                if args.json:
                    _json(entries)
                else:
                    rows = show.as_rows(entries)
                    runs = [row["run_id"] for row in rows if row["run_id"]]
                    named = await request_texts(MeshClient(bus), runs)
                    for row in rows:
                        row["request"] = named.get(row["run_id"] or "")
                        row["stored_at"] = row["stored_at"][:19].replace("T", " ")
                    out.print(fitted_table("revisions", rows, HISTORY, out.width, "request"))
            case "download":
                if args.revision is not None and args.revision < 1:
                    raise ClientError("--revision takes a revision number, 1 or more")
                written = await door.download(args.scene, settings.user, args.to, args.revision)
                if args.json:
                    _json([str(path) for path in written])
                else:
                    _lines(out, [str(path) for path in written])
            case _:
                rows = await door.scenes(settings.user)
                if args.json:
                    _json(rows)
                else:
                    for row in rows:
                        row["changed_at"] = (row["changed_at"] or "")[:19].replace("T", " ")
                    out.print(fitted_table("scenes", rows, SCENES, out.width, stretch=""))
    return EXIT_OK


HISTORY: list[Column] = [
    ("revision", 0),
    ("run_id", 0),
    ("request", 0),
    ("stored_at", 100),
    ("user", 120),
    ("scene_hash_prefix", 140),
]
SCENES: list[Column] = [
    ("scene_id", 0),
    ("revision", 0),
    ("objects", 0),
    ("run_id", 0),
    ("changed_at", 100),
    ("changed_by", 120),
]


def _lines(out: Screen, lines: list[str]) -> None:
    for line in lines:
        out.print(line, markup=False, highlight=False)


def asks_undo(prompt: str | None) -> bool:
    """Whether a request asks to undo a run, which only a revert does."""
    words = (prompt or "").lower().replace(",", " ").split()
    return "undo" in words


async def undo_hint(bus: Bus, settings: Settings, scene_id: str, err: Screen) -> None:
    """The revert that undoes the scene's last run: back to the revision before its head."""
    try:
        entries = await SceneDoor(bus, settings).history(scene_id, settings.user, limit=2)
    except ClientError:  # not a scene of this user's: nothing to go back to
        return
    if len(entries) == 2:
        err.print(
            f"blendmesh: to undo the last run on {scene_id}: "
            f"`blendmesh revert {scene_id} {entries[0].revision}`",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
