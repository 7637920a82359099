"""``blendmesh render``'s arguments (services/doors/cli/renders.py, docs/renders.md). Like
args.py, argparse alone is imported here."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def render(sub: Any) -> None:
    render = sub.add_parser(
        "render",
        help="render frames of a committed revision across the executors; "
        "`render show|cancel JOB`, `render frame JOB N`",
    )
    render.add_argument(
        "target", help="the scene to render, or show / cancel / frame to read a job"
    )
    render.add_argument("job", nargs="?", help="show, cancel, frame: the job's id")
    render.add_argument("frame", nargs="?", help="frame: which frame to download")
    render.add_argument("--revision", type=int, help="the revision (default: the newest)")
    render.add_argument("--frames", default="1", help="FIRST-LAST, both included (default 1)")
    render.add_argument("--engine", default="cycles", help="cycles (default), eevee or workbench")
    render.add_argument("--samples", type=int, default=16, help="samples per pixel (default 16)")
    render.add_argument("--size", default="640x360", help="WIDTHxHEIGHT (default 640x360)")
    render.add_argument(
        "--no-wait", action="store_true", help="print the job's id and return at once"
    )
    render.add_argument("--timeout", type=float, default=3600.0, help="seconds to follow it")
    render.add_argument("-o", "--output", type=Path, help="frame: where to write the PNG")
    render.add_argument("--json", action="store_true", help="print the job as JSON")
