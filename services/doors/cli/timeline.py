"""``blendmesh runs show RUN``: a run's timeline, as the audit service projects it.

Every event with its time and what it says, each operation with its arguments and
receipt, the policy's decision and who approved, the gates, the revision the run made,
and the releases that planned and executed it; ``--json`` prints the same as data
(``services/doors/core/timeline.py``). Only the home's user's runs: another user's run
answers as an unknown one does.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from contracts import subjects
from services.audit import client as audit
from services.doors.cli import console as show
from services.doors.cli.common import EXIT_OK, READ_SERVICES, connected
from services.doors.core import timeline
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.ownership import NotOwned, own_run
from services.runtime.service.settings import Settings

HASH_SHOWN = 12  # characters of a scene hash in the table; --json has them whole


async def cmd_show(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    try:
        subjects.check_token(args.run_id, "run id")
    except ValueError as exc:
        raise ClientError(f"{exc}; `blendmesh runs` lists the runs") from None
    async with connected(settings, READ_SERVICES) as bus:
        try:
            own_run(await MeshClient(bus).requested(args.run_id), args.run_id, settings.user)
        except NotOwned:
            raise ClientError(f"no run {args.run_id}; `blendmesh runs` lists the runs") from None
        detail = await audit.query_run(bus.nc, settings.prefix, args.run_id)
    account = timeline.as_json(detail)
    if args.json:
        sys.stdout.write(json.dumps(account, indent=2) + "\n")
        return EXIT_OK
    _print(out, account)
    return EXIT_OK


def _print(out: Console, account: dict[str, Any]) -> None:
    run = account["run"]
    out.print(f"run {run['run_id']}: {run['state']} (user {run['user']}, scene {run['scene_id']})")
    if run.get("error_code"):
        out.print(f"  {run['error_code']}: {run.get('message') or ''}", markup=False)
    if account["door"]:
        out.print(f"  asked through {account['door']}", markup=False)
    if origin := account["origin"]:
        start = (
            f"revision {origin['base_revision']}"
            if origin["kind"] == "fork"
            else f"operation {origin['from_op']}"
        )
        out.print(f"  {origin['kind']} of run {origin['run']} from {start}", markup=False)
    for stage in ("planned", "executed"):
        found = account["versions"][stage]
        if found:
            out.print(
                f"  {stage} by blendmesh {found['blendmesh_version'] or '?'}, tool catalog "
                f"{found['catalog_version'] or '?'}, Blender {found['blender_version'] or '?'}",
                markup=False,
            )
    made = account["revision"]
    out.print(f"  revision made: {made if made is not None else 'none'}")
    for verdict in account["gates"]:
        outcome = "passed" if verdict["passed"] else "failed " + ", ".join(verdict["failed_gates"])
        out.print(f"  gates on revision {verdict['revision']}: {outcome}", markup=False)
    rows = [_events_row(e) for e in account["timeline"]]
    out.print(show.rows_table("timeline", rows, ["time", "event", "detail"]))
    ops = [_operation_row(op) for op in account["operations"]]
    columns = ["operation_id", "tool", "args", "decision", "approved_by", "status",
               "duration_ms", "hash_before", "hash_after"]  # fmt: skip
    out.print(show.rows_table("operations", ops, columns))


def _events_row(entry: dict[str, Any]) -> dict[str, Any]:
    # Milliseconds: most of a run's events fall within one second.
    at = datetime.fromtimestamp(entry["at"], UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return {"time": at, "event": entry["type"].removeprefix("run."), "detail": entry["detail"]}


def _operation_row(op: dict[str, Any]) -> dict[str, Any]:
    args = op.get("args")
    row = dict(op)
    row["args"] = json.dumps(args, sort_keys=True) if args is not None else op.get("args_excerpt")
    row["hash_before"] = (op.get("scene_hash_before") or "")[:HASH_SHOWN] or None
    row["hash_after"] = (op.get("scene_hash_after") or "")[:HASH_SHOWN] or None
    return row
