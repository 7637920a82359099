"""``blendmesh inspect``, ``blendmesh view`` and ``blendmesh import-asset``: one object in
depth, a view written to a PNG file, an asset file into a collection.

Each is a run of one operation built by ``services/doors/core/scene_looks.py``, as the gateway and
the MCP server build it: policy decides it, the audit records it. The parsers are here so
the three commands read as one piece; everything heavy waits until a command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from services.runtime.settings import Settings

# contracts.views.MIN_SIDE / MAX_SIDE, spelled here: parsing imports no msgspec
# (tests/unit/doors/test_cli_imports.py), and a test holds the two equal.
MIN_SIDE, MAX_SIDE = 64, 2048


def _side(text: str) -> int:
    value = int(text)
    if not MIN_SIDE <= value <= MAX_SIDE:
        raise argparse.ArgumentTypeError(f"must be {MIN_SIDE} to {MAX_SIDE} pixels")
    return value


def add_parsers(sub: Any) -> None:
    inspect = sub.add_parser("inspect", help="one object of a scene in depth")
    inspect.add_argument("scene", help="the scene id")
    inspect.add_argument("object", help="the object's exact name")
    view = sub.add_parser("view", help="render a view of a scene to a PNG file")
    view.add_argument("scene", help="the scene id")
    view.add_argument("--output", "-o", type=Path, required=True, help="the PNG to write")
    view.add_argument("--width", type=_side, default=512, help="pixels (64 to 2048)")
    view.add_argument("--height", type=_side, default=512, help="pixels (64 to 2048)")
    view.add_argument("--azimuth", type=float, help="degrees: 0 from -Y, 90 from +X")
    view.add_argument("--elevation", type=float, help="degrees: 90 from above")
    view.add_argument("--camera", help="through this camera object instead of an angle")
    asset = sub.add_parser(
        "import-asset", help="add a glTF/GLB, FBX, OBJ, USD (.usda) or STL file to a scene"
    )
    asset.add_argument("file", type=Path, help="the asset file; its ending says its format")
    asset.add_argument("--scene", required=True, help="the scene id (a new id makes a new scene)")
    asset.add_argument("--collection", required=True, help="the collection it goes into")
    asset.add_argument("--approve", action="store_true", help="pre-approve the import")
    for parser in (inspect, view, asset):
        parser.add_argument("--json", action="store_true", help="print the answer as JSON")


async def dispatch(args: argparse.Namespace, settings: Settings, out: Console, err: Console) -> int:
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
        out.print(f"wrote {args.output} ({answered['width']}x{answered['height']})")
    return EXIT_OK
