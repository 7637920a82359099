"""``blendmesh scenes gc``, ``scenes tag``, ``scenes untag`` and ``scenes tags``: retention
by hand (docs/storage.md).

``gc`` collects at once what the executor collects every BLENDMESH_GC_INTERVAL: revisions
past BLENDMESH_KEEP_REVISIONS, chunks no kept revision names, expired result images and
staged uploads; it deletes from the executor's stores, so it joins the mesh as its admin
and needs the mesh's credentials file (``<home>/nats-credentials.json``, or
BLENDMESH_NATS_CREDENTIALS). A tag keeps one revision of your scene whatever its age; it
is set with the doors' login, like an import, once the scene is found to be yours.
"""

from __future__ import annotations

import argparse
import sys

import msgspec
from rich.console import Console

from services.doors.cli.common import EXIT_OK, connected
from services.doors.core.client import ClientError
from services.doors.core.scene_client import SceneDoor
from services.executor.client import Collector, KvSceneTags, retention_of
from services.runtime.nats.access import ADMIN
from services.runtime.service.settings import Settings

VERBS = ("gc", "tag", "untag", "tags")  # their arguments: services/doors/cli/args.py


async def dispatch(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    if args.scenes_command == "gc":
        return await _gc(args, settings, out)
    async with connected(settings, ()) as bus:  # the doors' login: it may write tags
        door = SceneDoor(bus, settings)
        await door.own(args.scene, settings.user)  # only the owner tags or reads tags
        store = KvSceneTags(bus.js, bus.prefix)
        match args.scenes_command:
            case "tag":
                known = {n for n, _ in await door.files.history(args.scene)}
                if args.revision not in known:
                    raise ClientError(
                        f"scene {args.scene} has no revision {args.revision}; "
                        f"`blendmesh scenes history {args.scene}` lists them"
                    )
                try:
                    await store.tag(args.scene, args.revision, args.name, settings.user)
                except ValueError as exc:
                    raise ClientError(str(exc)) from None
                out.print(f"{args.scene}: tag {args.name} keeps revision {args.revision}")
            case "untag":
                try:
                    removed = await store.untag(args.scene, args.name)
                except ValueError as exc:
                    raise ClientError(str(exc)) from None
                if not removed:
                    raise ClientError(
                        f"scene {args.scene} has no tag {args.name}; "
                        f"`blendmesh scenes tags {args.scene}` lists them"
                    )
                out.print(f"{args.scene}: tag {args.name} removed")
            case _:
                found = await store.of(args.scene)
                if args.json:
                    sys.stdout.write(msgspec.json.encode(found).decode() + "\n")
                else:
                    for name, revision in sorted(found.items()):
                        out.print(f"{name}\t{revision}", markup=False, highlight=False)
    return EXIT_OK


async def _gc(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    # Collecting deletes from the executor's stores: the admin's login, not the doors'.
    async with connected(settings, (), role=ADMIN) as bus:
        got = await Collector(bus.js, bus.prefix, retention_of(settings)).collect()
        if args.json:
            sys.stdout.write(msgspec.json.encode(got).decode() + "\n")
            return EXIT_OK
        out.print(
            f"removed {got.revisions} revisions, {got.chunks} chunks "
            f"({got.chunk_bytes / 1048576:.1f} MiB), {got.results} result images, "
            f"{got.uploads} staged uploads; keeping the last {settings.keep_revisions} "
            "revisions of each scene and every tagged one",
            markup=False,
            highlight=False,
        )
        if got.chunks_skipped:
            out.print(f"no chunk was collected: {got.chunks_skipped}", markup=False)
        return EXIT_OK
