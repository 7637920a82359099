"""Run a plan on a blendmesh mesh over plain NATS, follow it to its result, read its audit.

It imports nothing of blendmesh: everything it needs is the contract in docs/bus.md and
contracts/schemas/asyncapi.json. It prints one JSON object per line on stdout:

    {"kind": "event", "type": "run.planned", ...}       every event of the run, in order
    {"kind": "result", "status": "completed", ...}     the run's end (or its wait)
    {"kind": "audit", "operation_id": "a", ...}         each audit record of the run

Usage:

    python follow_run.py --login ana.json --scene demo --plan plan.json

It logs in as its user, with the user's own NKey: the mesh's operator makes the login
file with `blendmesh users add ana --new-key ana.json` (the seed is inside), or, for a key
the user made themselves, with `blendmesh users login ana --output ana.json`, the seed
then given in --seed-file PATH or the BLENDMESH_NKEY_SEED environment variable (never on
the command line, where other users of the machine could read it). The login reaches
only the bus door's subjects for its user: the server refuses it everything else.
Exit status: 0 completed, 1 failed, 2 refused by the door, 3 waiting for a person.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client

# The run's end: the result events, and the one after which a person must answer.
ENDED = {"run.completed": "completed", "run.failed": "failed", "run.plan_rejected": "failed"}
WAITING = "run.approval_requested"
SEED_ENV = "BLENDMESH_NKEY_SEED"


class Refused(Exception):
    """The door answered no; the message says why and what to do."""


def run_request(login: dict[str, Any], scene: str, plan: Any) -> dict[str, Any]:
    """A ``run.requested`` event (contracts/schemas/events/run.requested.v1.json); its
    run id begins with the login's ``run_prefix``, as the door asks."""
    request_id = plan.get("request_id") if isinstance(plan, dict) else None
    return {
        "type": "run.requested",
        "event_id": str(uuid.uuid4()),
        "at": time.time(),
        "run_id": f"{login['run_prefix']}-{uuid.uuid4().hex[:20]}",
        "request_id": request_id or f"req-{uuid.uuid4().hex[:20]}",
        "thread_id": f"thread-{uuid.uuid4().hex[:20]}",
        "user": login["user"],
        "scene_id": scene,
        "plan": plan,
        "planner": "plan",
    }


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


class Door:
    """The bus door as one user sees it: ``<prefix>.api.<user>.<verb>`` (docs/bus.md §4)."""

    def __init__(self, nc: Client, login: dict[str, Any]) -> None:
        self.nc = nc
        self.prefix = login["prefix"]
        self.user = login["subject_user"]

    async def ask(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        subject = f"{self.prefix}.api.{self.user}.{verb}"
        reply = await self.nc.request(subject, json.dumps(body).encode(), timeout=10)
        answer: dict[str, Any] = json.loads(reply.data)
        if not answer["ok"]:
            raise Refused(f"{answer['error']['code']}: {answer['error']['message']}")
        return answer

    def feed(self, run_id: str) -> str:
        return f"{self.prefix}.feed.{self.user}.run.{run_id}.*"

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        """Every event of the run so far, page by page."""
        return await self.pages("run.events", "events", run_id)

    async def records(self, run_id: str) -> list[dict[str, Any]]:
        """Every audit record of the run so far, page by page."""
        return await self.pages("run.audit", "records", run_id)

    async def pages(self, verb: str, field: str, run_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            answer = await self.ask(verb, {"run_id": run_id, "offset": offset})
            out += answer[field]
            offset = answer.get("next_offset")
        return out


async def follow(door: Door, request: dict[str, Any], timeout: float) -> int:
    """Submit the request and print the run's events until it ends; the exit status."""
    run_id = request["run_id"]
    # Subscribe first, then read what came before: nothing can be missed.
    sub = await door.nc.subscribe(door.feed(run_id))
    try:
        await door.ask("run.submit", request)
        seen: set[str] = set()
        backlog = await door.events(run_id)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if backlog:
                event = backlog.pop(0)
            else:
                try:
                    event = json.loads((await sub.next_msg(timeout=1.0)).data)
                except TimeoutError:
                    continue
            if event["event_id"] in seen:
                continue  # both in the backlog and on the feed
            seen.add(event["event_id"])
            emit("event", type=event["type"], event_id=event["event_id"])
            if event["type"] in ENDED:
                emit("result", status=ENDED[event["type"]], run_id=run_id, event=event)
                return 0 if ENDED[event["type"]] == "completed" else 1
            if event["type"] == WAITING:
                emit("result", status="awaiting_confirmation", run_id=run_id, event=event)
                return 3
        emit("result", status="timeout", run_id=run_id)
        return 1
    finally:
        await sub.unsubscribe()


async def read_audit(door: Door, run_id: str, idle: float) -> None:
    """Print the run's audit records once none has been added for ``idle`` seconds (the
    audit service records a run as it projects it, normally milliseconds after)."""
    records: list[dict[str, Any]] = []
    still = time.monotonic()
    while time.monotonic() - still < idle:
        found = await door.records(run_id)
        if len(found) != len(records):
            records, still = found, time.monotonic()
        await asyncio.sleep(0.2)
    for record in records:
        emit("audit", **{k: v for k, v in record.items() if k != "type"})


async def main(args: argparse.Namespace, login: dict[str, Any], plan: Any) -> int:
    nc = await nats.connect(
        args.nats or login["url"],
        name="follow-run-example",
        nkeys_seed_str=login["seed"],  # the server's NKey challenge: the seed never leaves
        inbox_prefix=login["inbox_prefix"],  # the only inbox this login may listen on
    )
    try:
        door = Door(nc, login)
        request = run_request(login, args.scene, plan)
        try:
            status = await follow(door, request, args.timeout)
            await read_audit(door, request["run_id"], args.idle)
        except Refused as exc:
            print(f"the mesh refused: {exc}", file=sys.stderr)
            return 2
        return status
    finally:
        await nc.close()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--login", required=True, help="the login file `blendmesh users` made")
    parser.add_argument("--nats", help="NATS URL, when not the login file's")
    parser.add_argument("--scene", required=True, help="the scene to change")
    parser.add_argument("--plan", required=True, help="a spec 000 operation set, as JSON")
    parser.add_argument("--seed-file", help="a file holding the user's NKey seed (SU...)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait")
    parser.add_argument("--idle", type=float, default=1.5, help="audit settle seconds")
    return parser.parse_args(argv)


def read_login(args: argparse.Namespace) -> dict[str, Any]:
    """The login file, with the seed from it, ``--seed-file`` or ``BLENDMESH_NKEY_SEED``."""
    login: dict[str, Any] = json.loads(Path(args.login).read_text())
    if args.seed_file:
        login["seed"] = Path(args.seed_file).read_text().strip()
    elif os.environ.get(SEED_ENV):
        login["seed"] = os.environ[SEED_ENV].strip()
    if not str(login.get("seed", "")).startswith("SU"):
        sys.exit(f"give the user's NKey seed (SU...) in the login file, --seed-file or {SEED_ENV}")
    if not (args.nats or login.get("url")):
        sys.exit("the login file names no mesh URL: give --nats nats://HOST:PORT")
    return login


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    credentials = read_login(arguments)
    plan_json = json.loads(Path(arguments.plan).read_text())
    sys.exit(asyncio.run(main(arguments, credentials, plan_json)))
