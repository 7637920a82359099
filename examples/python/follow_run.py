"""Run a plan on a blendmesh mesh over plain NATS, follow it to its result, tail its audit.

It imports nothing of blendmesh: everything it needs is the contract in docs/bus.md and
contracts/schemas/asyncapi.json. It prints one JSON object per line on stdout:

    {"kind": "event", "type": "run.planned", ...}       every event of the run, in order
    {"kind": "result", "status": "completed", ...}     the run's end (or its wait)
    {"kind": "audit", "operation_id": "a", ...}         each audit record of the run

Usage:

    BLENDMESH_NKEY_SEED=SUA... python follow_run.py \\
        --nats nats://external:PASSWORD@127.0.0.1:4222 \\
        --scene demo --user ana --plan plan.json

It logs in as ``external``, whose password is in the mesh's credentials file
(``nats-credentials.json`` in its home), and signs the request with the user's NKey seed:
from ``--seed-file PATH`` or the ``BLENDMESH_NKEY_SEED`` environment variable, never from
the command line, where other users of the machine could read it. The mesh's operator
registers the seed's public key first: ``blendmesh users add ana --key U...``.
Exit status: 0 completed, 1 failed, 3 waiting for a person's approval.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import nats
import nkeys
from nats.js.api import ConsumerConfig, DeliverPolicy

# The run's end: the result events, and the one after which a person must answer.
ENDED = {"run.completed": "completed", "run.failed": "failed", "run.plan_rejected": "failed"}
WAITING = "run.approval_requested"
SEED_ENV = "BLENDMESH_NKEY_SEED"


def stream(prefix: str, kind: str) -> str:
    """A stream's name, as docs/bus.md gives it: the prefix upper-cased, '-' as '_'."""
    return f"{prefix.upper().replace('-', '_')}_{kind}"


def signed(seed: bytes, subject: str, body: bytes) -> dict[str, str]:
    """The headers that sign ``body`` on ``subject`` (docs/bus.md, "Who you are"): an
    ed25519 signature of the subject, a newline and the body, by the user's NKey."""
    pair = nkeys.from_seed(bytearray(seed))
    signature = pair.sign(subject.encode() + b"\n" + body)
    return {
        "Blendmesh-Signer": pair.public_key.decode(),
        "Blendmesh-Signature": base64.urlsafe_b64encode(signature).rstrip(b"=").decode(),
    }


def named() -> ConsumerConfig:
    """The mesh refuses consumers without a name (docs/bus.md, "Logging in")."""
    return ConsumerConfig(name=f"example-{uuid.uuid4().hex[:16]}")


def run_request(args: argparse.Namespace, plan: Any) -> dict[str, Any]:
    """A ``run.requested`` event (contracts/schemas/events/run.requested.v1.json)."""
    run_id = f"run-{uuid.uuid4().hex[:20]}"
    request_id = plan.get("request_id") if isinstance(plan, dict) else None
    return {
        "type": "run.requested",
        "event_id": str(uuid.uuid4()),
        "at": time.time(),
        "run_id": run_id,
        "request_id": request_id or f"req-{uuid.uuid4().hex[:20]}",
        "thread_id": f"thread-{uuid.uuid4().hex[:20]}",
        "user": args.user,
        "scene_id": args.scene,
        "plan": plan,
        "planner": "plan",
    }


def emit(kind: str, **fields: Any) -> None:
    print(json.dumps({"kind": kind, **fields}), flush=True)


async def follow(js: Any, prefix: str, request: dict[str, Any], seed: bytes, timeout: float) -> int:
    """Publish the signed request and print the run's events until it ends; the exit
    status. The mesh checks the signature and passes the request on to the run's own
    subjects, where it shows as the run's first event."""
    run_id = request["run_id"]
    # Subscribe first, from the start of the run's subjects: nothing can be missed.
    sub = await js.subscribe(
        f"{prefix}.run.{run_id}.*",
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        stream=stream(prefix, "EVENTS"),
        config=named(),
    )
    try:
        subject = f"{prefix}.signed.{run_id}.requested"
        body = json.dumps(request).encode()
        await js.publish(
            subject,
            body,
            stream=stream(prefix, "EVENTS"),
            headers={"Nats-Msg-Id": request["event_id"], **signed(seed, subject, body)},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = await sub.next_msg(timeout=1.0)
            except TimeoutError:
                continue
            event = json.loads(msg.data)
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


async def tail_audit(js: Any, prefix: str, run_id: str, idle: float) -> None:
    """Print the run's audit records from the start of the audit stream, until none has
    come for ``idle`` seconds (the audit service publishes them as it projects the run)."""
    sub = await js.subscribe(
        f"{prefix}.audit.*.*.{run_id}",
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        stream=stream(prefix, "AUDIT"),
        config=named(),
    )
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=idle)
            except TimeoutError:
                return
            record = json.loads(msg.data)
            emit("audit", **{k: v for k, v in record.items() if k != "type"})
    finally:
        await sub.unsubscribe()


async def main(args: argparse.Namespace, plan: Any, seed: bytes) -> int:
    # Replies and deliveries arrive only under the role's own inbox prefix.
    nc = await nats.connect(args.nats, name="follow-run-example", inbox_prefix=args.inbox)
    try:
        js = nc.jetstream()
        request = run_request(args, plan)
        status = await follow(js, args.prefix, request, seed, args.timeout)
        await tail_audit(js, args.prefix, request["run_id"], args.idle)
        return status
    finally:
        await nc.close()


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nats", required=True, help="NATS URL, with user:password")
    parser.add_argument("--prefix", default="blendmesh", help="the mesh's BLENDMESH_PREFIX")
    parser.add_argument("--scene", required=True, help="the scene to change")
    parser.add_argument("--user", required=True, help="who asks for the run")
    parser.add_argument("--plan", required=True, help="a spec 000 operation set, as JSON")
    parser.add_argument("--seed-file", help="a file holding the user's NKey seed (SU...)")
    parser.add_argument("--inbox", default="_INBOX.external", help="the role's inbox prefix")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait")
    parser.add_argument("--idle", type=float, default=3.0, help="audit tail idle seconds")
    return parser.parse_args(argv)


def user_seed(args: argparse.Namespace) -> bytes:
    """The user's NKey seed, from ``--seed-file`` or ``BLENDMESH_NKEY_SEED``."""
    text = Path(args.seed_file).read_text() if args.seed_file else os.environ.get(SEED_ENV, "")
    seed = text.strip().encode()
    if not seed.startswith(b"SU"):
        sys.exit(f"give the user's NKey seed (SU...) in --seed-file or {SEED_ENV}")
    return seed


if __name__ == "__main__":
    arguments = parse(sys.argv[1:])
    plan_json = json.loads(Path(arguments.plan).read_text())
    sys.exit(asyncio.run(main(arguments, plan_json, user_seed(arguments))))
