"""``blendmesh projects ...`` and ``blendmesh scenes lock|unlock``: projects, members,
roles and locks as the local user (docs/studio.md), through the rules every door shares
(services/doors/core/studio.py). No service is needed: each change is an event in the log,
read back from the book it folds into.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import msgspec
from rich.console import Console

from contracts.projects import personal_project
from services.doors.cli.common import EXIT_OK, connected
from services.doors.core.studio import Studio, project_fields
from services.executor.client import SceneFiles
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings

LOCK_VERBS = ("lock", "unlock")  # under `blendmesh scenes`; their arguments: args.py


def studio_of(bus: Any) -> Studio:
    """The doors' project and lock rules on ``bus``."""
    return Studio(projects_of(bus), SceneFiles(bus.js, bus.prefix), bus.publisher)


def _print(out: Console, as_json: bool, fields: Any, lines: list[str]) -> None:
    if as_json:
        sys.stdout.write(msgspec.json.encode(fields).decode() + "\n")
        return
    for line in lines:
        out.print(line, markup=False, highlight=False)


def _project_lines(fields: dict[str, Any]) -> list[str]:
    lines = [f"{fields['project_id']}: you are its {fields['role']}"]
    lines += [f"  member {name}\t{role}" for name, role in fields["members"].items()]
    lines += [f"  scene  {scene}" for scene in fields["scenes"]]
    lines += [f"  locked {lk['scene_id']} by {lk['holder']}" for lk in fields["locks"]]
    return lines


async def dispatch(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    user = settings.user
    async with connected(settings, ()) as bus:
        studio = studio_of(bus)
        if args.command == "scenes":
            return await _locks(args, studio, user, out)
        match args.projects_command:
            case "create":
                book = await studio.create(args.project, user)
            case "add-member":
                book = await studio.add_member(args.project, args.member, args.role, user)
            case "remove-member":
                book = await studio.remove_member(args.project, args.member, user)
                if book.role(args.project, user) is None:
                    out.print(f"you left {args.project}", markup=False, highlight=False)
                    return EXIT_OK
            case "file":
                book = await studio.file_scene(args.project, args.scene, user)
            case "show":
                book = await studio.book.current()
            case _:
                book = await studio.book.current()
                now = time.time()
                listed = [project_fields(book, p.project_id, user, now) for p in book.visible(user)]
                fields = {"personal": personal_project(user), "projects": listed}
                lines = [f"{personal_project(user)}: your personal project (scenes in no other)"]
                lines += [f"{p['project_id']}: {p['role']}" for p in listed]
                _print(out, getattr(args, "json", False), fields, lines)
                return EXIT_OK
        fields = project_fields(book, args.project, user, time.time())
        _print(out, getattr(args, "json", False), fields, _project_lines(fields))
    return EXIT_OK


async def _locks(args: argparse.Namespace, studio: Studio, user: str, out: Console) -> int:
    if args.scenes_command == "unlock":
        held = await studio.unlock(args.scene, user)
        out.print(f"{args.scene}: released {held.holder}'s lock", markup=False, highlight=False)
    elif args.breaking:
        held = await studio.break_lock(args.scene, user, args.note)
        out.print(f"{args.scene}: broke {held.holder}'s lock", markup=False, highlight=False)
    else:
        held = await studio.lock(args.scene, user, args.ttl, args.note)
        until = time.strftime("%H:%M:%S UTC", time.gmtime(held.expires_at))
        out.print(
            f"{args.scene}: locked by {held.holder} until {until}", markup=False, highlight=False
        )
    return EXIT_OK
