"""What a ``blendmesh`` command does once its arguments are parsed, and how its failures
read. Imported by ``services.doors.cli.main`` only after parsing, and each command imports what it
alone uses, so none pays for another's SDK (google-genai, the gateway, the MCP server)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from contracts.events import RunRequested
from contracts.session import CLI
from services.doors.cli.common import EXIT_FAILED, EXIT_OK, connected, progress, report, watch
from services.doors.cli.mesh import Mesh
from services.doors.cli.plans import load_plan
from services.doors.cli.screen import rich, screen
from services.doors.cli.threads import scene_thread
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.requests import build_request
from services.planner.client import fallback_notice, planner_for
from services.runtime.service.settings import Settings
from services.runtime.service.tracing import configure_tracing, shutdown_tracing

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.resolutions import Resolution
    from services.doors.cli.screen import Screen


def run_request(args: argparse.Namespace, settings: Settings, plan: Any) -> RunRequested:
    """The request ``blendmesh run`` sends: from the CLI's host (spec 001), with the
    determinism its ``--determinism`` asks for."""
    request = build_request(
        user=settings.user,
        scene_id=args.scene,
        prompt=args.prompt,
        plan=plan,
        planner=planner_for(settings),
        thread_id=args.thread,
        pre_approved=args.approve,
        rollback_boundary=args.rollback,
        max_operations=settings.max_operations,
        host=CLI,
        determinism=args.determinism,
    )
    if args.thread:
        return request
    # Only a request that is valid touches the home: a refused one leaves nothing behind.
    thread = scene_thread(settings.home, settings.user, args.scene, new=args.new_thread)
    return msgspec.structs.replace(request, thread_id=thread)


async def _reached(bus: Any, scene_id: str, user: str) -> None:
    """Refuse a run on another user's scene, or another project's, as a read of an unknown
    scene is refused; a viewer's run and a locked scene are the policy's to deny, naming
    why, as before."""
    # The heads alone: every store the executor's client reaches would slow each run.
    from services.doors.core.ownership import NotOwned
    from services.doors.core.studio import Forbidden, SceneLocked, Studio
    from services.executor.adapters.heads import KvHeads
    from services.runtime.service.projects import projects_of

    studio = Studio(projects_of(bus), KvHeads(bus.js, bus.prefix), bus.publisher)
    try:
        await studio.may_start(scene_id, user)
    except NotOwned:
        raise ClientError(f"no scene {scene_id}; `blendmesh scenes` lists yours") from None
    except (Forbidden, SceneLocked):
        pass


async def cmd_run(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    from services.doors.cli import scenes as cli_scenes

    if bool(args.prompt) == bool(args.plan):
        raise ClientError('give either a request ("add a cube named Box") or --plan FILE')
    plan = load_plan(args.plan) if args.plan else None
    notice = fallback_notice(settings.env) if args.prompt else None
    if notice:
        err.print(notice, markup=False, highlight=False)
    request = run_request(args, settings, plan)
    adopt = cli_scenes.guard_export(args, settings)  # before anything is planned
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        await _reached(bus, args.scene, settings.user)
        client = MeshClient(bus, watch(bus, err))
        imported = adopt and await cli_scenes.adopt(args, settings, client, err, request)
        if imported:
            return report(imported, args.json, out)
        result = await client.run(request, progress(err, args.json), args.timeout)
        if result.status == "failed" and cli_scenes.asks_undo(args.prompt):
            await cli_scenes.undo_hint(bus, settings, args.scene, err)
    if not args.json:
        err.print(
            f"thread {request.thread_id}: the next run on scene {args.scene} continues it "
            '("it", "the copy", "again"); --new-thread starts over',
            markup=False,
            highlight=False,
        )
    return report(result, args.json, out)


async def cmd_resolve(
    args: argparse.Namespace, settings: Settings, decision: Resolution, out: Screen, err: Screen
) -> int:
    from services.doors.cli import console as show
    from services.doors.cli import scenes as cli_scenes
    from services.doors.core.client import CodeNotQuoted

    quoted = getattr(args, "code_sha256", [])
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        client = MeshClient(bus, watch(bus, err))
        try:
            result = await client.resolve(
                args.run_id,
                decision,
                settings.user,
                progress(err, args.json),
                args.timeout,
                code_sha256=quoted,
            )
        except CodeNotQuoted:
            # Show what is asked, so the person reads the code before quoting its hash.
            waiting = await client.view(args.run_id)
            if waiting is not None and waiting.pending is not None:
                show.print_approval(rich(err), waiting.pending)
            raise
        # An import `run --adopt` left waiting carries the request it was run for.
        result = await cli_scenes.after_import(
            settings, result, client, progress(err, args.json), args.timeout, err
        )
    return report(result, args.json, out)


async def cmd_cancel(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    """Cancel a run as this home's user and print how it ended."""
    from services.doors.core.cancels import NoSuchRun, cancel_run
    from services.doors.core.reviews import registry_approvers
    from services.runtime.server.identity import may_resolve

    async with connected(settings, tuple(Mesh.all_services())) as bus:
        client = MeshClient(bus, watch(bus, err))
        asked = await client.requested(args.run_id)
        # Another user's run answers as an unknown one, unless an approver asks: approvers
        # may cancel any run, as at the other doors.
        if asked is None or not may_resolve(
            settings.user, asked.user, registry_approvers(settings)()
        ):
            raise NoSuchRun("there is no such run; `blendmesh runs` lists yours")
        view = await cancel_run(
            client, args.run_id, settings.user, args.reason, progress(err, args.json), args.timeout
        )
    return report(view.result, args.json, out)


async def cmd_allowlist(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    from services.doors.cli import console as show
    from services.policy import client as allowlist

    if args.action == "revoke" and not args.entry_id:
        raise ClientError("give the entry to revoke: `blendmesh allowlist revoke ENTRY_ID`")
    async with connected(settings, ("policy",)) as bus:
        if args.action == "revoke":
            try:
                entry = await allowlist.revoke_entry(
                    bus.nc, settings.prefix, args.entry_id, revoked_by=settings.user
                )
            except allowlist.AllowlistRefused as exc:
                raise ClientError(str(exc)) from None
            out.print(
                f"revoked {entry.entry_id}: {entry.tool} on {entry.scene_id} for {entry.user}"
            )
            return EXIT_OK
        entries = await allowlist.list_entries(bus.nc, settings.prefix)
    rows = show.as_rows(entries)
    out.print(
        show.rows_table(
            "allowlist", rows, ["entry_id", "user", "tool", "scene_id", "created_by", "run_id"]
        )
    )
    return EXIT_OK


async def cmd_guardians(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    """The guardians' verdict on a revision, as the guardians service would judge it."""
    from contracts import subjects
    from services.doors.cli import guardians as cli_guardians
    from services.doors.core.scene_client import SceneDoor
    from services.guardians import client as guardians

    subjects.check_token(args.scene, "scene id")
    async with connected(settings, ()) as bus:
        # Another user's scene, or another project's, answers as an unknown one.
        await SceneDoor(bus, settings).own(args.scene, settings.user)
        try:
            result = await guardians.judge_revision(
                bus.js, settings.prefix, args.scene, settings.env, args.revision, args.guardian
            )
        except guardians.NoArtifact as exc:
            raise ClientError(str(exc)) from None
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        for line in cli_guardians.verdict_lines(args.scene, result):
            out.print(line, markup=False, highlight=False)
    return EXIT_OK if result["ok"] else EXIT_FAILED


async def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve an MCP server on stdin/stdout; stdout carries the protocol and nothing else."""
    match args.server:
        case "guardians":
            from services.guardians.mcp_server import serve_stdio

            await serve_stdio()
            return EXIT_OK
        case "blendmesh":
            from services.doors.mcp.stdio import serve_stdio as serve_door

            async with connected(settings, tuple(Mesh.all_services()), session=True) as bus:
                await serve_door(settings, bus)
            return EXIT_OK
    raise AssertionError(args.server)


async def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    out, err = screen(), screen(stderr=True)
    match args.command:
        case "run":
            return await cmd_run(args, settings, out, err)
        case "approve":
            decision: Resolution = "approve_and_always_allow" if args.always else "approve_once"
            return await cmd_resolve(args, settings, decision, out, err)
        case "allowlist":
            return await cmd_allowlist(args, settings, rich(out))
        case "reject":
            return await cmd_resolve(args, settings, "reject", out, err)
        case "cancel":
            return await cmd_cancel(args, settings, out, err)
        case "up":
            from services.doors.cli.up import cmd_up

            if args.executors is not None:
                if args.executors < 1:
                    raise ClientError("--executors needs at least 1")
                settings = settings.with_(executors=args.executors)
            if not 0 <= args.port <= 65535:
                raise ClientError("--port needs a number from 0 to 65535")
            return await cmd_up(settings, rich(err), args.port)
        case "scenes" | "revert":
            from services.doors.cli import scenes as cli_scenes

            return await cli_scenes.dispatch(args, settings, out, err)
        case "projects":
            from services.doors.cli import projects as cli_projects

            return await cli_projects.dispatch(args, settings, rich(out))
        case "render":
            from services.doors.cli import renders as cli_renders

            return await cli_renders.dispatch(args, settings, out, err)
        case "libraries":
            from services.doors.cli import libraries as cli_libraries

            return await cli_libraries.dispatch(args, settings, out, err)
        case "inspect" | "view" | "import-asset":
            from services.doors.cli import looks as cli_looks

            return await cli_looks.dispatch(args, settings, out, err)
        case "users":
            from services.doors.cli import users as cli_users

            return cli_users.dispatch(args, settings, rich(out))
        case "runs" | "audit":
            from services.doors.cli import reads as cli_reads

            if args.command == "runs" and args.runs_command in ("rerun", "fork", "replay"):
                from services.doors.cli import steer as cli_steer

                return await cli_steer.dispatch(args, settings, out, err)
            if args.command == "runs" and args.runs_command == "show":
                from services.doors.cli import timeline as cli_timeline

                return await cli_timeline.cmd_show(args, settings, rich(out))
            if args.command == "runs":
                return await cli_reads.cmd_runs(args, settings, rich(out))
            return await cli_reads.cmd_audit(args, settings, rich(out))
        case "status":
            from services.doors.cli import status as cli_status

            return await cli_status.cmd_status(args, settings, rich(out))
        case "guardians":
            return await cmd_guardians(args, settings, rich(out))
        case "tools":
            from services.doors.cli import tools as cli_tools

            return await cli_tools.cmd_tools(args, settings, rich(out))
        case "mcp":
            return await cmd_mcp(args, settings)
        case "addon":
            from services.doors.cli import addon as cli_addon

            return cli_addon.dispatch(args, rich(out))
    raise AssertionError(args.command)


def execute(args: argparse.Namespace) -> int:
    """Run the parsed command; a failure a person can act on becomes one line and an exit
    code, never a traceback."""
    from services.doors.cli.failures import exit_code_for

    err = screen(stderr=True)
    try:
        settings = Settings.from_env()
        if args.home:
            settings = settings.with_(home=args.home.absolute())
        configure_tracing(settings)
        return asyncio.run(dispatch(args, settings))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        failure = exit_code_for(exc)
        if failure is None:
            raise
        code, message = failure
        # Unwrapped: a message may name a hash or an id the person copies whole.
        err.print(f"blendmesh: {message}", highlight=False, markup=False, soft_wrap=True)
        return code
    finally:
        shutdown_tracing()
