"""``blendmesh libraries`` (your project's library revisions), ``blendmesh libraries
update SCENE NAME REVISION`` and ``blendmesh libraries publish SCENE NAME FILE`` (runs:
the default policy asks a person to approve them)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from services.doors.cli.common import EXIT_OK, connected, progress, report
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.library_client import LibraryDoor
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    if args.libraries_command in ("update", "publish"):
        async with connected(settings, tuple(Mesh.all_services())) as bus:
            door = LibraryDoor(bus, settings)
            if args.libraries_command == "update":
                request = await door.update_request(
                    settings.user, args.scene, args.name, args.revision, pre_approved=args.approve
                )
            else:
                request = await door.publish_request(
                    settings.user, args.scene, args.name, args.file, pre_approved=args.approve
                )
            result = await MeshClient(bus).run(request, progress(err, args.json))
        return report(result, args.json, out)
    async with connected(settings, ()) as bus:
        rows = await LibraryDoor(bus, settings).revisions(settings.user)
    if args.json:
        sys.stdout.write(msgspec.json.encode(rows).decode() + "\n")
        return EXIT_OK
    for row in rows:
        out.print(
            f"{row['library']}  {row['revision']}  {row['sha256']}", markup=False, highlight=False
        )
    if not rows:
        out.print("no libraries yet: `blendmesh scenes import SHOT.blend` brings a shot's along")
    return EXIT_OK
