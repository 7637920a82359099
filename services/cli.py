"""The ``blendmesh`` command.

Without NATS_URL every command starts the embedded mesh on ``--home`` (default ./var),
does its job and stops it again; with NATS_URL it joins the mesh that runs there.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from contracts import subjects
from contracts.events import Resolution
from services import cli_guardians, cli_reads, cli_scenes, cli_status, cli_users
from services import console as show
from services.audit import client as audit
from services.cli_common import (
    EXIT_FAILED,
    EXIT_MESH,
    EXIT_OK,
    EXIT_USAGE,
    connected,
    progress,
    report,
    watch,
)
from services.client import ClientError, CodeNotQuoted, MeshClient, RunTimedOut, build_request
from services.gateway.app import GatewayServer, create_app
from services.guardians import client as guardians
from services.mesh import Mesh, MeshBusy
from services.planner.client import fallback_notice, planner_for
from services.policy import client as allowlist
from services.runtime.access import CLIENT, CredentialsError
from services.runtime.embedded import EmbeddedServerError
from services.runtime.host import Bus, ServiceFailed
from services.runtime.settings import Settings, SettingsError
from services.runtime.tracing import configure_tracing, shutdown_tracing


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="blendmesh", description=__doc__)
    p.add_argument("--home", type=Path, help="state directory (default: $BLENDMESH_HOME or ./var)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the services do")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="plan and apply a request to a scene")
    run.add_argument("prompt", nargs="?", help='e.g. "add a cube named Box at 0 0 1"')
    run.add_argument(
        "--plan",
        type=Path,
        help="run a hand-written plan: a spec 000 operation set or a spec 004 Geometry Nodes "
        "response (JSON)",
    )
    run.add_argument("--scene", default="default", help="scene id (default: default)")
    run.add_argument("--thread", help="thread id to continue")
    run.add_argument("--approve", action="store_true", help="pre-approve destructive operations")
    run.add_argument(
        "--rollback",
        choices=("operation", "run"),
        default="operation",
        help="what a failure undoes: the failed operation (default) or the whole run",
    )
    run.add_argument("--json", action="store_true", help="print the run result as JSON")
    run.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a result")

    up = sub.add_parser("up", help="run the mesh in the foreground until Ctrl-C")
    up.add_argument("--executors", type=int, help="executor instances (default: 1)")
    up.add_argument(
        "--port", type=int, default=8000, help="HTTP gateway port (default: 8000; 0: any free)"
    )
    runs = sub.add_parser("runs", help="list recent runs")
    runs.add_argument("--limit", type=int, default=20)
    aud = sub.add_parser("audit", help="show a run's audit trail, or `audit rebuild`")
    aud.add_argument("run_id", help="a run id, or `rebuild` to replay the log into the views")
    for name in ("approve", "reject"):
        cmd = sub.add_parser(name, help=f"{name} the operations a run waits on")
        cmd.add_argument("run_id")
        cmd.add_argument("--json", action="store_true", help="print the run result as JSON")
        cmd.add_argument(
            "--timeout", type=float, default=600.0, help="seconds to wait for a result"
        )
        if name == "approve":
            cmd.add_argument(
                "--always",
                action="store_true",
                help="approve, and from now on allow these tools on this scene without asking",
            )
            cmd.add_argument(
                "--code-sha256",
                action="append",
                default=[],
                metavar="HASH",
                help="the sha256:<hex> of trusted Python code you read and approve (repeatable; "
                "the approval prompt prints it)",
            )
    allow = sub.add_parser("allowlist", help="list standing approvals, or `allowlist revoke ID`")
    allow.add_argument("action", nargs="?", choices=("revoke",), help="revoke one entry")
    allow.add_argument("entry_id", nargs="?", help="the entry to revoke")
    judge = sub.add_parser("guardians", help="print what the guardians say of a scene revision")
    judge.add_argument("scene", help="the scene id")
    judge.add_argument("--revision", type=int, help="a revision number (default: the head)")
    judge.add_argument(
        "--guardian",
        action="append",
        default=[],
        metavar="ID",
        help="a guardian to run (repeatable; default: the configured gates)",
    )
    judge.add_argument("--json", action="store_true", help="print run_guardians' whole result")
    mcp = sub.add_parser(
        "mcp", help="serve an MCP server on stdio: blendmesh's front door, or `mcp guardians`"
    )
    mcp.add_argument(
        "server",
        nargs="?",
        choices=("blendmesh", "guardians"),
        default="blendmesh",
        help="blendmesh (default): run, runs, run_status, audit, scene, preview, as the local "
        "user on the mesh; guardians: spec 003's one tool, run_guardians",
    )
    cli_scenes.add_parsers(sub, run)
    cli_users.add_parsers(sub)
    cli_status.add_parser(sub)
    return p


def load_plan(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        raise ClientError(f"cannot read plan {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ClientError(f"plan {path} is not JSON: {exc}") from None
    except RecursionError:
        raise ClientError(
            f"plan {path} is nested too deeply to read; an operation set (spec 000) is a "
            "list of flat operations"
        ) from None


async def cmd_run(args: argparse.Namespace, settings: Settings, out: Console, err: Console) -> int:
    if bool(args.prompt) == bool(args.plan):
        raise ClientError('give either a request ("add a cube named Box") or --plan FILE')
    plan = load_plan(args.plan) if args.plan else None
    notice = fallback_notice(settings.env) if args.prompt else None
    if notice:
        err.print(notice, markup=False, highlight=False)
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
    )
    adopt = cli_scenes.guard_export(args, settings)  # before anything is planned
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        client = MeshClient(bus, watch(bus, err))
        imported = adopt and await cli_scenes.adopt(args, settings, client, err, request)
        if imported:
            return report(imported, args.json, out)
        result = await client.run(request, progress(err, args.json), args.timeout)
        if result.status == "failed" and cli_scenes.asks_undo(args.prompt):
            await cli_scenes.undo_hint(bus, settings, args.scene, err)
    return report(result, args.json, out)


async def cmd_resolve(
    args: argparse.Namespace, settings: Settings, decision: Resolution, out: Console, err: Console
) -> int:
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
            waiting = await client.result(args.run_id)
            if waiting is not None and waiting.approval is not None:
                show.print_approval(err, args.run_id, waiting.approval)
            raise
        # An import `run --adopt` left waiting carries the request it was run for.
        result = await cli_scenes.after_import(
            settings, result, client, progress(err, args.json), args.timeout, err
        )
    return report(result, args.json, out)


async def cmd_allowlist(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    if args.action == "revoke" and not args.entry_id:
        raise ClientError("give the entry to revoke: `blendmesh allowlist revoke ENTRY_ID`")
    async with connected(settings, ("policy",)) as bus:
        if args.action == "revoke":
            try:
                entry = await allowlist.revoke_entry(bus.nc, settings.prefix, args.entry_id)
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


@contextmanager
def _stop_signals() -> Iterator[asyncio.Event]:
    """An event set by Ctrl-C or SIGTERM, installed before anything starts so a signal
    that arrives early still stops the mesh cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _until(stop: asyncio.Event, server: GatewayServer, mesh: Mesh) -> str | None:
    """Until a stop signal, the gateway ending by itself, or the mesh failing (its
    nats-server exited, a service died); then how the mesh failed, or None."""
    served = asyncio.ensure_future(server.wait())
    stopped = asyncio.ensure_future(stop.wait())
    died = asyncio.ensure_future(mesh.wait())
    await asyncio.wait([served, stopped, died], return_when=asyncio.FIRST_COMPLETED)
    for task in (served, stopped, died):
        task.cancel()
    return died.result() if died.done() and not died.cancelled() else None


async def cmd_up(settings: Settings, err: Console, port: int) -> int:
    with _stop_signals() as stop:
        mesh = Mesh(settings)
        url = await mesh.start()
        bus: Bus | None = None
        server: GatewayServer | None = None
        try:
            bus = await Bus.open(
                url,
                settings.prefix,
                "blendmesh-gateway",
                mesh.login(CLIENT),
                settings.replicas,
                settings.start_wait,
            )
            app = create_app(settings, bus)
            server = GatewayServer(app, port=port)
            http = await server.start()
            executors = f", {settings.executors} executors" if settings.executors > 1 else ""
            up = f"blendmesh mesh is up: NATS_URL={url}{executors} gateway {http}"
            err.print(
                f"{up}  (Ctrl-C stops it)",
                markup=False,
                highlight=False,
            )
            if mesh.embedded:
                err.print(f"NATS users: {settings.credentials_path}", markup=False, highlight=False)
            if not len(app.state.tokens):
                err.print("no BLENDMESH_API_TOKENS are set: every /api request answers 401")
            died = await _until(stop, server, mesh)
            if died is not None:
                # Without its server, or one of its services, the mesh cannot do its work.
                # Stop loudly, so a supervisor (systemd, a container runtime) restarts it.
                err.print(
                    f"blendmesh up: {died}\nthe mesh stops; start it again with `blendmesh up`",
                    markup=False,
                    highlight=False,
                )
                return EXIT_MESH
        finally:
            if server is not None:
                await server.stop()
            if bus is not None:
                await bus.close()
            await mesh.stop()
    return EXIT_OK


async def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    # Piped output is read by scripts and grep: keep every row on one line.
    out = Console(width=None if sys.stdout.isatty() else 1000)
    err = Console(stderr=True, width=None if sys.stderr.isatty() else 1000)
    match args.command:
        case "run":
            return await cmd_run(args, settings, out, err)
        case "approve":
            decision: Resolution = "approve_and_always_allow" if args.always else "approve_once"
            return await cmd_resolve(args, settings, decision, out, err)
        case "allowlist":
            return await cmd_allowlist(args, settings, out)
        case "reject":
            return await cmd_resolve(args, settings, "reject", out, err)
        case "up":
            if args.executors is not None:
                if args.executors < 1:
                    raise ClientError("--executors needs at least 1")
                settings = settings.with_(executors=args.executors)
            if not 0 <= args.port <= 65535:
                raise ClientError("--port needs a number from 0 to 65535")
            return await cmd_up(settings, err, args.port)
        case "scenes" | "revert":
            return await cli_scenes.dispatch(args, settings, out, err)
        case "users":
            return cli_users.dispatch(args, settings, out)
        case "runs":
            return await cli_reads.cmd_runs(args, settings, out)
        case "audit":
            return await cli_reads.cmd_audit(args, settings, out)
        case "status":
            return await cli_status.cmd_status(args, settings, out)
        case "guardians":
            return await cmd_guardians(args, settings, out)
        case "mcp":
            return await cmd_mcp(args, settings)
    raise AssertionError(args.command)


async def cmd_guardians(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    """The guardians' verdict on a revision, as the guardians service would judge it."""
    subjects.check_token(args.scene, "scene id")
    async with connected(settings, ()) as bus:
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
    # Imported here: the MCP SDK is loaded only by the command that serves it.
    match args.server:
        case "guardians":
            from services.guardians.mcp_server import serve_stdio

            await serve_stdio()
            return EXIT_OK
        case "blendmesh":
            from services.mcp.server import serve_stdio as serve_door

            async with connected(settings, tuple(Mesh.all_services())) as bus:
                await serve_door(settings, bus)
            return EXIT_OK
    raise AssertionError(args.server)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not args.verbose:
        # nats-py logs its own races as tracebacks (a pong for a flush that was cancelled
        # while a failed start is torn down); what a person needs reaches them as
        # blendmesh's own message. With --verbose they show.
        logging.getLogger("nats").setLevel(logging.CRITICAL)
    err = Console(stderr=True)
    try:
        settings = Settings.from_env()
        if args.home:
            settings = settings.with_(home=args.home.absolute())
        configure_tracing(settings)
        return asyncio.run(dispatch(args, settings))
    except KeyboardInterrupt:
        return 130
    except RunTimedOut as exc:  # the mesh did not finish in time: a mesh problem, not usage
        err.print(f"blendmesh: {exc}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_MESH
    except (ClientError, SettingsError, ValueError) as exc:
        # Unwrapped: a message may name a hash or an id the person copies whole.
        err.print(f"blendmesh: {exc}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_USAGE
    except (
        MeshBusy,
        ServiceFailed,
        EmbeddedServerError,
        ConnectionError,
        CredentialsError,
        audit.AuditClientError,
        allowlist.AllowlistError,
    ) as exc:
        err.print(f"blendmesh: {exc}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_MESH
    finally:
        shutdown_tracing()


if __name__ == "__main__":
    sys.exit(main())
