"""Every ``blendmesh`` command's arguments, and nothing else.

Kept apart from the commands so ``blendmesh --help`` and a mistyped argument answer
before any service, NATS client or SDK is imported: this module needs argparse alone
(tests/unit/doors/test_cli_imports.py holds it to that).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from services.doors.cli import render_args, studio_args
from services.doors.cli.library_args import add_download, add_libraries

ADOPT, DISCARD = "--adopt", "--discard"
# contracts.views.MIN_SIDE / MAX_SIDE, spelled here: parsing imports no msgspec
# (tests/unit/doors/test_cli_imports.py), and a test holds the two equal.
MIN_SIDE, MAX_SIDE = 64, 2048
SHADINGS = ("material", "solid", "rendered")  # contracts.views.SHADINGS, likewise
EXPORT_FORMATS = ("fbx", "glb", "obj", "stl", "usd")  # contracts.exports.FORMATS, likewise


def add_commands(sub: Any) -> None:
    """Every command, onto ``blendmesh``'s subparsers."""
    run = _run(sub)
    _up(sub)
    runs = sub.add_parser(
        "runs", help="list recent runs, or `runs show|rerun|fork|replay`: one's timeline, steering"
    )
    runs.add_argument("--limit", type=int, default=20)
    shown = runs.add_subparsers(dest="runs_command", metavar="show|rerun|fork|replay")
    one = shown.add_parser(
        "show",
        help="a run's timeline: every event, each operation with its arguments and receipt, "
        "decisions, approvals, gates, the revision made, and the versions that ran it",
    )
    one.add_argument("run_id", help="the run, as `blendmesh runs` lists it")
    one.add_argument("--json", action="store_true", help="print the timeline as JSON")
    _steering(shown)
    aud = sub.add_parser("audit", help="show a run's audit trail, or `audit rebuild`")
    aud.add_argument("run_id", help="a run id, or `rebuild` to replay the log into the views")
    _resolve(sub)
    _cancel(sub)
    allow = sub.add_parser("allowlist", help="list standing approvals, or `allowlist revoke ID`")
    allow.add_argument("action", nargs="?", choices=("revoke",), help="revoke one entry")
    allow.add_argument("entry_id", nargs="?", help="the entry to revoke")
    _guardians(sub)
    _tools(sub)
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
    _scenes(sub, run)
    studio_args.projects(sub)
    render_args.render(sub)
    _looks(sub)
    _users(sub)
    _status(sub)
    _addon(sub)


def _run(sub: Any) -> argparse.ArgumentParser:
    run: argparse.ArgumentParser = sub.add_parser("run", help="plan and apply a request to a scene")
    run.add_argument("prompt", nargs="?", help='e.g. "add a cube named Box at 0 0 1"')
    run.add_argument(
        "--plan",
        type=Path,
        help="run a hand-written plan: a spec 000 operation set or a spec 004 Geometry Nodes "
        "response (JSON)",
    )
    run.add_argument("--scene", default="default", help="scene id (default: default)")
    thread = run.add_mutually_exclusive_group()
    thread.add_argument(
        "--thread", help="thread id to continue (default: the last one on this scene)"
    )
    thread.add_argument(
        "--new-thread",
        action="store_true",
        help='start a new thread: "it" and "the copy" no longer refer to earlier runs',
    )
    run.add_argument("--approve", action="store_true", help="pre-approve destructive operations")
    run.add_argument(
        "--rollback",
        choices=("operation", "run"),
        default="operation",
        help="what a failure undoes: the failed operation (default) or the whole run",
    )
    run.add_argument(
        "--determinism",
        choices=("any", "required"),
        default="any",
        help="required: refuse the run if a tool of its plan cannot give a reproducible "
        "result (spec 001 nondeterministic_refused)",
    )
    run.add_argument("--json", action="store_true", help="print the run result as JSON")
    run.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a result")
    return run


def _up(sub: Any) -> None:
    up = sub.add_parser("up", help="run the mesh in the foreground until Ctrl-C")
    up.add_argument("--executors", type=int, help="executor instances (default: 1)")
    up.add_argument(
        "--port", type=int, default=8000, help="HTTP gateway port (default: 8000; 0: any free)"
    )


def _resolve(sub: Any) -> None:
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


def _cancel(sub: Any) -> None:
    cmd = sub.add_parser(
        "cancel",
        help="cancel a run: it stops after the operation in hand and keeps nothing",
    )
    cmd.add_argument("run_id")
    cmd.add_argument("--reason", default="", help="why, for the log (at most 500 characters)")
    cmd.add_argument("--json", action="store_true", help="print the run result as JSON")
    cmd.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for its end")


def _tools(sub: Any) -> None:
    tools = sub.add_parser(
        "tools",
        help="the tools a plan may name: the core set and the categories, one category "
        "(e.g. modelling), or --search WORDS",
    )
    tools.add_argument("category", nargs="?", help="one category, e.g. modelling, uv, shading")
    tools.add_argument("--search", metavar="WORDS", help="find tools by words of what they do")
    tools.add_argument("--limit", type=int, default=8, help="at most this many found (1..20)")
    tools.add_argument("--json", action="store_true", help="print the tools with their schemas")


def _guardians(sub: Any) -> None:
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


def _scenes(sub: Any, run: argparse.ArgumentParser) -> None:
    """The scene commands, and ``run``'s two answers to a changed exported file."""
    choice = run.add_mutually_exclusive_group()
    choice.add_argument(
        ADOPT,
        action="store_true",
        help="the exported .blend was changed by hand: import it as a new revision first",
    )
    choice.add_argument(
        DISCARD,
        action="store_true",
        help="the exported .blend was changed by hand: keep a copy beside it and replace it",
    )
    scenes = sub.add_parser(
        "scenes",
        help="your scenes; `scenes show|history|diff|review|import|export|download|tag|gc`, "
        "`scenes lock|unlock`",
    )
    scenes.add_argument("--json", action="store_true", help="print JSON")
    verbs = scenes.add_subparsers(dest="scenes_command")
    for name, what in (("show", "what a scene holds"), ("history", "a scene's revisions")):
        verb = verbs.add_parser(name, help=what)
        verb.add_argument("scene", help="the scene id")
        verb.add_argument("--json", action="store_true", help="print JSON")
    studio_args.changes(verbs)
    imp = verbs.add_parser("import", help="make a .blend file a new revision of a scene")
    imp.add_argument("file", type=Path, help="a .blend saved by Blender")
    imp.add_argument("--scene", required=True, help="the scene id (a new id makes a new scene)")
    imp.add_argument("--approve", action="store_true", help="pre-approve the import")
    imp.add_argument("--json", action="store_true", help="print the run result as JSON")
    add_download(verbs)
    exp = verbs.add_parser("export", help="download a scene as a glb, fbx, obj, usd or stl file")
    exp.add_argument("scene", help="the scene id")
    exp.add_argument("--format", required=True, choices=EXPORT_FORMATS, help="the file format")
    exp.add_argument("--output", "-o", type=Path, required=True, help="the file to write")
    exp.add_argument("--json", action="store_true", help="print the answer as JSON")
    _retention(verbs)
    studio_args.locks(verbs)
    add_libraries(sub)
    revert = sub.add_parser("revert", help="make a new revision equal to an earlier one")
    revert.add_argument("scene", help="the scene id")
    revert.add_argument("revision", type=int, help="the revision to go back to")
    revert.add_argument("--approve", action="store_true", help="pre-approve the revert")
    revert.add_argument("--json", action="store_true", help="print the run result as JSON")


def _retention(verbs: Any) -> None:
    """``scenes gc|tag|untag|tags`` (services/doors/cli/retention.py)."""
    gc = verbs.add_parser(
        "gc", help="remove revisions past the retention policy, unnamed chunks, old uploads"
    )
    gc.add_argument("--json", action="store_true", help="print JSON")
    tag = verbs.add_parser("tag", help="keep a revision whatever its age: SCENE REVISION NAME")
    tag.add_argument("scene", help="the scene id")
    tag.add_argument("revision", type=int, help="the revision to keep")
    tag.add_argument("name", help="the tag (letters, digits, '_' or '-'); tagging again moves it")
    untag = verbs.add_parser("untag", help="let retention collect a tagged revision again")
    untag.add_argument("scene", help="the scene id")
    untag.add_argument("name", help="the tag")
    tags = verbs.add_parser("tags", help="a scene's tags and the revisions they keep")
    tags.add_argument("scene", help="the scene id")
    tags.add_argument("--json", action="store_true", help="print JSON")


def _side(text: str) -> int:
    value = int(text)
    if not MIN_SIDE <= value <= MAX_SIDE:
        raise argparse.ArgumentTypeError(f"must be {MIN_SIDE} to {MAX_SIDE} pixels")
    return value


def _looks(sub: Any) -> None:
    """``inspect``, ``view`` and ``import-asset`` (services/doors/cli/looks.py)."""
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
    view.add_argument(
        "--shading",
        choices=SHADINGS,
        default=SHADINGS[0],
        help="material colours and textures (default), flat solid, or rendered with Cycles",
    )
    asset = sub.add_parser(
        "import-asset", help="add a glTF/GLB, FBX, OBJ, USD (.usda) or STL file to a scene"
    )
    asset.add_argument("file", type=Path, help="the asset file; its ending says its format")
    asset.add_argument("--scene", required=True, help="the scene id (a new id makes a new scene)")
    asset.add_argument("--collection", required=True, help="the collection it goes into")
    asset.add_argument("--approve", action="store_true", help="pre-approve the import")
    for parser in (inspect, view, asset):
        parser.add_argument("--json", action="store_true", help="print the answer as JSON")


def _users(sub: Any) -> None:
    users = sub.add_parser("users", help="who may log in to the bus: `users add|login|list|remove`")
    verbs = users.add_subparsers(dest="users_command", required=True)
    adding = verbs.add_parser("add", help="register a user's public NKey (U...)")
    adding.add_argument("name", help="the user the key logs in as")
    key = adding.add_mutually_exclusive_group(required=True)
    key.add_argument("--key", help="the public user key, 'U' and 55 more")
    key.add_argument(
        "--new-key",
        metavar="FILE",
        type=Path,
        help="make a new key and write the user's login, seed included, to FILE (owner-only)",
    )
    role = adding.add_mutually_exclusive_group()
    role.add_argument(
        "--approver", action="store_true", default=None, help="may resolve others' approvals"
    )
    role.add_argument(
        "--no-approver",
        dest="approver",
        action="store_false",
        default=None,
        help="only their own runs'",
    )
    login = verbs.add_parser("login", help="what one user needs to connect (no secrets)")
    login.add_argument("name", help="a registered user")
    login.add_argument("--output", type=Path, help="write it to this file, not stdout")
    listing = verbs.add_parser("list", help="the registered users and their keys")
    listing.add_argument("--json", action="store_true", help="print JSON")
    removing = verbs.add_parser("remove", help="remove a user, or one of their keys")
    removing.add_argument("name", help="the user")
    removing.add_argument("--key", help="remove only this key")


def _status(sub: Any) -> None:
    status = sub.add_parser(
        "status",
        help="show each service, its instances and JetStream's state; exit 3 when a run "
        "cannot go through",
    )
    status.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    status.add_argument(
        "--timeout", type=float, default=2.0, help="seconds to wait for NATS (default: 2)"
    )
    status.add_argument(
        "--wait",
        type=float,
        default=None,
        help="seconds to wait for the services' answers (default: a health check's own wait)",
    )


def _addon(sub: Any) -> None:
    """``addon build`` (services/doors/cli/addon.py)."""
    addon = sub.add_parser("addon", help="the Blender add-on: `addon build` writes its zip")
    action = addon.add_subparsers(dest="addon_command", required=True)
    build = action.add_parser("build", help="write the installable add-on zip")
    build.add_argument(
        "--output",
        type=Path,
        help="the zip to write (default: ./blendmesh-addon-<version>.zip)",
    )


def _steering(shown: Any) -> None:
    """``runs rerun``, ``runs fork`` and ``runs replay`` (ADR 0063)."""
    rerun = shown.add_parser(
        "rerun",
        help="run a failed or completed run again from operation N: what it committed is "
        "skipped as idempotent, the rest runs",
    )
    rerun.add_argument("run_id", help="your run, as `blendmesh runs` lists it")
    rerun.add_argument(
        "--from", dest="from_op", type=int, required=True, metavar="N",
        help="the operation to run again from, 1 for the first, in `runs show` order",
    )  # fmt: skip
    fork = shown.add_parser(
        "fork", help="a new run of a run's plan, or an edited one, on the revision it started from"
    )
    fork.add_argument("run_id", help="your run, as `blendmesh runs` lists it")
    fork.add_argument(
        "--from", dest="from_op", type=int, default=1, metavar="N",
        help="start from the revision operation N met (default 1: the one the run started "
        "from) and run the plan from N on",
    )  # fmt: skip
    replay = shown.add_parser(
        "replay", help="re-run the runs a filter selects, after an incident; --dry-run first"
    )
    replay.add_argument(
        "--since", help="runs created at or after: ISO 8601 (UTC unless it says), or seconds"
    )
    replay.add_argument(
        "--until", help="runs created at or before: ISO 8601 (UTC unless it says), or seconds"
    )
    replay.add_argument("--status", choices=("completed", "failed"), help="only runs that ended so")
    replay.add_argument("--error-code", help="only runs that failed with this code")
    replay.add_argument("--limit", type=int, default=10, help="at most this many runs (1-50)")
    replay.add_argument(
        "--dry-run", action="store_true",
        help="list what would run again and what is already committed; run nothing",
    )  # fmt: skip
    for cmd in (rerun, fork):
        cmd.add_argument(
            "--plan", type=Path, metavar="FILE",
            help="an edited plan (a spec 000 operation set) instead of the run's own",
        )  # fmt: skip
    for cmd in (rerun, fork, replay):
        cmd.add_argument(
            "--approve", action="store_true", help="pre-approve destructive operations"
        )
        cmd.add_argument("--json", action="store_true", help="print the result as JSON")
        cmd.add_argument(
            "--timeout", type=float, default=600.0, help="seconds to wait for each result"
        )
