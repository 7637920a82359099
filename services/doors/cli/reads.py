"""``blendmesh runs`` and ``blendmesh audit``: what the audit service's views say."""

from __future__ import annotations

import argparse

from rich.console import Console

from contracts import subjects
from services.audit import client as audit
from services.doors.cli import console as show
from services.doors.cli.common import EXIT_OK, READ_SERVICES, connected
from services.doors.cli.tables import Column, fitted_table, plan_text, request_texts
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.ownership import NotOwned, own_run
from services.runtime.nats.history import read_run
from services.runtime.service.settings import Settings

RUNS: list[Column] = [
    ("run_id", 0),
    ("state", 0),
    ("scene_id", 0),
    ("request", 0),
    ("created", 100),
    ("user", 120),
    ("planner", 140),
    ("error_code", 140),
    ("blend_path", 200),
]


async def cmd_runs(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    async with connected(settings, READ_SERVICES) as bus:
        rows = show.as_rows(await audit.query_runs(bus.nc, settings.prefix, limit=args.limit))
        # A plan run as written has no words: its RunRequested says what it does.
        plans = [row["run_id"] for row in rows if row.get("prompt") is None]
        named = await request_texts(MeshClient(bus), plans)
    for row in rows:
        row["request"] = named.get(row["run_id"], row["request"])
        if out.width < 140:
            row["state"] = STATE_WORDS.get(row["state"], row["state"])
    out.print(fitted_table("runs", rows, RUNS, out.width, stretch="request"))
    return EXIT_OK


STATE_WORDS = {"awaiting_confirmation": "awaiting"}  # where a terminal has no room for it


async def cmd_audit(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    async with connected(settings, READ_SERVICES) as bus:
        if args.run_id == "rebuild":
            summary = await audit.rebuild(bus.nc, settings.prefix)
            counts = ", ".join(f"{view} {n}" for view, n in summary.counts.items())
            out.print(
                f"rebuilt the audit views from the log up to seq {summary.last_seq}: {counts}"
            )
            return EXIT_OK
        subjects.check_token(args.run_id, "run id")
        try:
            # Another user's run answers as an unknown one, as at `runs show`.
            asked = own_run(
                await MeshClient(bus).requested(args.run_id), args.run_id, settings.user
            )
        except NotOwned:
            raise ClientError(f"no run {args.run_id}; `blendmesh runs` lists the runs") from None
        view = await audit.query_run(bus.nc, settings.prefix, args.run_id)
        # Arguments and approvers are read from the log, the record of what was asked.
        details = show.operation_details(await read_run(bus.js, settings.prefix, args.run_id))
    run = show.as_rows([view.run])
    run[0]["request"] = (
        show.request_text(view.run.prompt, n=show.REQUEST_WHOLE)
        if view.run.prompt is not None
        else plan_text(asked.plan)
    )
    out.print(
        show.rows_table(
            "run",
            run,
            [
                "run_id",
                "created",
                "state",
                "request_id",
                "thread_id",
                "user",
                "scene_id",
                "request",
                "error_code",
            ],
        )
    )
    actions = show.as_rows(view.actions)
    for row in actions:
        row.update(details.get(row["operation_id"], {}))
    out.print(
        show.rows_table(
            "actions",
            actions,
            [
                "operation_id",
                "tool_name",
                "args",
                "safety_level",
                "decision",
                "approved_by",
                "state",
                "updated",
            ],
        )
    )
    out.print(
        show.rows_table(
            "audit records",
            show.as_rows(view.audit_records),
            [
                "timestamp",
                "operation_id",
                "tool_name",
                "safety_level",
                "status",
                "mcp_call_id",
                "blender_mutation_id",
                "scene_hash_before",
                "scene_hash_after",
            ],
        )
    )
    return EXIT_OK
