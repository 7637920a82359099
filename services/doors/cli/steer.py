"""``blendmesh runs rerun|fork|replay``: steering a user's own runs after something went
wrong (issue 42, ADR 0063). Each makes a new run through the planner and the policy like
``blendmesh run``; ``services/doors/core/steer_client.py`` builds it for every door.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from contracts.receipts import RunResult
from contracts.session import CLI
from services.doors.cli.common import EXIT_FAILED, EXIT_OK, connected, progress, report, watch
from services.doors.cli.mesh import Mesh
from services.doors.cli.plans import load_plan
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.steer_client import Replayed, ReplayFilter, Steering
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    if args.runs_command == "replay":
        return await _replay(args, settings, out, err)
    plan = load_plan(args.plan) if args.plan else None
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        steering = Steering(bus, settings, CLI)
        if args.runs_command == "rerun":
            request, steered = await steering.rerun(
                args.run_id, settings.user, args.from_op, plan, args.approve
            )
        else:
            request, steered = await steering.fork(
                args.run_id, settings.user, plan, args.approve, args.from_op
            )
        if not args.json:
            origin = steered.origin
            start = (
                f"revision {origin.base_revision}"
                if origin.kind == "fork"
                else f"operation {origin.from_op}"
            )
            err.print(
                f"run {request.run_id}: {origin.kind} of {origin.run} from {start}",
                markup=False,
                highlight=False,
            )
        result = await MeshClient(bus, watch(bus, err)).run(
            request, progress(err, args.json), args.timeout
        )
    return report(result, args.json, out)


def when(text: str | None, flag: str) -> float | None:
    """A time a person writes: seconds since the epoch, or ISO 8601 (UTC unless it says)."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ClientError(
            f"{flag} {text!r} is not a time: give ISO 8601 (2026-12-06T14:00) or seconds"
        ) from None
    if moment.tzinfo is None:  # as `blendmesh runs` shows times: UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


async def _replay(args: argparse.Namespace, settings: Settings, out: Screen, err: Screen) -> int:
    chosen = ReplayFilter(
        since=when(args.since, "--since"),
        until=when(args.until, "--until"),
        status=args.status,
        error_code=args.error_code,
        limit=args.limit,
    )
    chosen.check()
    async with connected(settings, tuple(Mesh.all_services())) as bus:
        replays = await Steering(bus, settings, CLI).replay(settings.user, chosen, args.approve)
        results: dict[str, RunResult] = {}
        if not args.dry_run:
            client = MeshClient(bus, watch(bus, err))
            for item in replays:
                if item.request is not None:
                    results[item.run_id] = await client.run(
                        item.request, progress(err, True), args.timeout
                    )
    account = [_account(item, results.get(item.run_id)) for item in replays]
    if args.json:
        sys.stdout.write(json.dumps({"dry_run": args.dry_run, "runs": account}, indent=2) + "\n")
    else:
        _print(out, account, args.dry_run)
    ended = [results[r] for r in results]
    return EXIT_OK if all(r.status == "completed" for r in ended) else EXIT_FAILED


def _account(item: Replayed, result: RunResult | None) -> dict[str, Any]:
    row: dict[str, Any] = {"run_id": item.run_id}
    if item.steered is None:
        row["refused"] = item.refused
        return row
    statuses = {r.operation_id: r.status for r in result.receipts} if result else {}
    row["rerun_id"] = item.request.run_id if item.request else None
    row["operations"] = [
        {"operation_id": op_id, "verdict": verdict, "status": statuses.get(op_id)}
        for op_id, verdict in item.steered.verdicts.items()
    ]
    if result is not None:
        row["status"] = result.status
        row["error_code"] = result.failure.error_code if result.failure else None
    return row


def _print(out: Screen, account: list[dict[str, Any]], dry_run: bool) -> None:
    if not account:
        out.print("no run matches the filter; `blendmesh runs` lists yours", markup=False)
    for row in account:
        if "refused" in row:
            out.print(f"{row['run_id']}: not replayed: {row['refused']}", markup=False)
            continue
        ops = row["operations"]
        committed = [o["operation_id"] for o in ops if o["verdict"] == "committed"]
        again = [o["operation_id"] for o in ops if o["verdict"] == "runs again"]
        head = f"{row['run_id']}: " + (
            "would re-run" if dry_run else f"re-ran as {row['rerun_id']}"
        )
        if not dry_run:
            head += f", {row['status']}"
        out.print(head, markup=False, highlight=False)
        out.print(f"  already committed: {', '.join(committed) or 'none'}", markup=False)
        out.print(f"  runs again: {', '.join(again) or 'none'}", markup=False)
