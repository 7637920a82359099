"""``blendmesh inspect``, ``blendmesh view``, ``blendmesh import-asset`` and ``blendmesh
scenes export``: one object in depth, a view written to a PNG file, an asset file into a
collection, the scene written to a GLB, FBX, OBJ, USD or STL file.

Each is a run of one operation built by ``services/doors/core/scene_looks.py``, as the gateway and
the MCP server build it: policy decides it, the audit records it. Their arguments are
parsed in ``services/doors/cli/args.py``, which imports nothing a command needs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen
    from services.runtime.service.settings import Settings


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    from services.doors.cli.common import EXIT_FAILED, EXIT_OK, connected, progress, report
    from services.doors.cli.mesh import Mesh
    from services.doors.core.client import ClientError, MeshClient
    from services.doors.core.scene_client import SceneDoor
    from services.doors.core.scene_looks import SceneLooks, check_asset, operation_result

    data = b""
    if args.command == "import-asset":
        try:
            data = await asyncio.to_thread(args.file.read_bytes)
        except OSError as exc:
            raise ClientError(f"cannot read {args.file}: {exc.strerror}") from None
        # Refused before a mesh starts: the same check the import makes again.
        await asyncio.to_thread(
            check_asset, data, args.file.name, args.collection, settings.max_upload_bytes
        )
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        looks = SceneLooks(SceneDoor(bus, settings))
        user = settings.user
        if args.command == "inspect":
            request = await looks.inspect_request(user, args.scene, args.object)
        elif args.command == "view":
            request = await looks.view_request(
                user,
                args.scene,
                args.width,
                args.height,
                args.azimuth,
                args.elevation,
                args.camera,
                args.shading,
            )
        else:
            request = await looks.asset_request(
                user, args.scene, data, args.file.name, args.collection, args.approve
            )
        result = await MeshClient(bus).run(request, progress(err, args.json))
        png = await looks.image(user, result) if args.command == "view" else None
    answered = operation_result(result)
    if args.command == "import-asset" or answered is None:
        return report(result, args.json, out)
    if args.command == "view":
        if png is None:
            err.print("blendmesh: the rendered view expired from the store; render it again")
            return EXIT_FAILED
        await asyncio.to_thread(args.output.write_bytes, png)
        answered = {**answered, "output": str(args.output)}
    if args.json or args.command == "inspect":
        sys.stdout.write(json.dumps({"run_id": result.run_id, **answered}, indent=2) + "\n")
    else:
        out.print(f"wrote {args.output} ({answered['width']}x{answered['height']})", markup=False)
    return EXIT_OK


async def export(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    """``blendmesh scenes export SCENE --format F -o FILE``."""
    from services.doors.cli.common import EXIT_FAILED, EXIT_OK, connected, progress, report
    from services.doors.cli.mesh import Mesh
    from services.doors.core.client import ClientError, MeshClient
    from services.doors.core.scene_client import SceneDoor
    from services.doors.core.scene_looks import SceneLooks, operation_result

    if args.output.is_dir():  # refused before a mesh starts for it
        raise ClientError(f"{args.output} is a folder; name the file to write, e.g. -o scene.glb")
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        looks = SceneLooks(SceneDoor(bus, settings))
        request = await looks.export_request(settings.user, args.scene, args.format)
        result = await MeshClient(bus).run(request, progress(err, args.json))
        data = await looks.download(settings.user, result)
    answered = operation_result(result)
    if answered is None:
        return report(result, args.json, out)
    if data is None:
        err.print("blendmesh: the exported file expired from the store; export it again")
        return EXIT_FAILED
    try:
        await asyncio.to_thread(_write, args.output, data)
    except OSError as exc:
        raise ClientError(f"cannot write {args.output}: {exc.strerror}") from None
    answered = {**answered, "output": str(args.output)}
    if args.json:
        sys.stdout.write(json.dumps({"run_id": result.run_id, **answered}, indent=2) + "\n")
    else:
        said = f"wrote {args.output} ({answered['format']}, {answered['bytes']} bytes)"
        out.print(said, markup=False)
    return EXIT_OK


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` whole or not at all: beside ``path`` first, then renamed over it."""
    part = path.with_name(f".{path.name}.part")
    part.write_bytes(data)
    os.replace(part, path)
