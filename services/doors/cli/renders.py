"""``blendmesh render``: ask for a render job, follow it, show it, cancel it, download a
frame (docs/renders.md, docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from contracts.render_fold import RenderJob
from contracts.renders import parse_frames, parse_size, spec_of
from services.doors.cli.common import connected
from services.doors.cli.mesh import Mesh
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.renders import (
    RenderQuota,
    cancel_render,
    follow_job,
    frame_png,
    job_of,
    request_render,
)
from services.executor.client import RenderFrames, SceneFiles
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen

EXIT_OK, EXIT_NOT_DONE = 0, 1
VERBS = ("show", "cancel", "frame")


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    if args.target in VERBS:
        if not args.job:
            raise ClientError(f"give the job: `blendmesh render {args.target} JOB`")
        return await _read(args, settings, out)
    return await _render(args, settings, out, err)


async def _render(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    first, last = parse_frames(args.frames)
    width, height = parse_size(args.size)
    spec = spec_of(first, last, args.engine, args.samples, width, height)
    quota = RenderQuota.from_env(settings.env)
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        client = MeshClient(bus)
        request = await request_render(
            client,
            SceneFiles(bus.js, bus.prefix),
            quota,
            settings.user,
            args.target,
            args.revision,
            spec,
        )
        job_id = request.run_id
        if args.no_wait:
            out.print(job_id, markup=False, highlight=False)
            return EXIT_OK

        def said(job: RenderJob) -> None:
            if not args.json:
                line = f"{job_id}: {len(job.frames)}/{job.total} frames ({job.status})"
                err.print(line, markup=False, highlight=False)

        job = await follow_job(client, job_id, settings.user, args.timeout, said)
    _print(job, args.json, out)
    return EXIT_OK if job.status == "completed" else EXIT_NOT_DONE


async def _read(args: argparse.Namespace, settings: Settings, out: Screen) -> int:
    async with connected(settings, ()) as bus:
        client = MeshClient(bus)
        if args.target == "cancel":
            job = await cancel_render(client, args.job, settings.user)
        else:
            job = await job_of(client, args.job, settings.user)
        if args.target != "frame":
            _print(job, args.json, out)
            return EXIT_OK
        if args.frame is None or not str(args.frame).isdigit():
            raise ClientError("give the frame: `blendmesh render frame JOB N [-o FILE]`")
        png = await frame_png(RenderFrames(bus.js, bus.prefix), job, int(args.frame))
    if args.output is None:
        sys.stdout.buffer.write(png)
    else:
        args.output.write_bytes(png)
    return EXIT_OK


def _print(job: RenderJob, as_json: bool, out: Screen) -> None:
    if as_json:
        sys.stdout.write(msgspec.json.encode(job).decode() + "\n")
        return
    spec = job.spec
    lines = [
        f"job {job.job_id}: {job.status}, {len(job.frames)} of {job.total} frames",
        f"scene {job.scene_id} revision {job.revision}: frames {spec.first}-{spec.last}, "
        f"{spec.engine}, {spec.samples} samples, {spec.width}x{spec.height}",
    ]
    if job.message:
        lines.append(job.message)
    lines += [
        f"  frame {f.frame}: {f.sha256[:16]} {f.size} bytes by {f.executor}" for f in job.frames
    ]
    for line in lines:
        out.print(line, markup=False, highlight=False)
