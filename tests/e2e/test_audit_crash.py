"""The audit service killed with SIGKILL while it publishes its records in batches: once it
is started again, every record is on the audit stream exactly once (ADR 0069)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.audit import decode_audit
from contracts.events import AnyEvent, decode_event
from services.audit.client import query_run
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus

PREFIX = "bmauditcrash"
ROOT = Path(__file__).resolve().parents[2]
HISTORY = ROOT / "tests" / "fixtures" / "run_history_ring.jsonl"
RECORDS = 7  # audit records of one copy of the recorded history
COPIES = 60


def copies() -> list[AnyEvent]:
    """The recorded history ``COPIES`` times, each copy a run of its own: every id, run id
    and cause renamed, so the copies are independent runs with the same records."""
    lines = HISTORY.read_text().splitlines()
    ids = [msgspec.json.decode(line)["event_id"] for line in lines]
    out = []
    for k in range(COPIES):
        for line in lines:
            text = line
            for old in ids:
                text = text.replace(f'"{old}"', f'"c{k}-{old}"')
            text = text.replace('"run-ring"', f'"run-ring-{k}"').replace(
                '"run-mat"', f'"run-mat-{k}"'
            )
            out.append(decode_event(text.encode()))
    return out


def audit_process(url: str, home: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "NATS_URL": url,
        "BLENDMESH_PREFIX": PREFIX,
        "BLENDMESH_HOME": str(home),
        "BLENDMESH_ACK_WAIT": "2",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "services.audit"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def records_stored(bus: Bus) -> int:
    try:
        info = await bus.js.stream_info(subjects.audit_stream_name(PREFIX))
    except Exception:  # noqa: BLE001 - the audit service creates its stream as it starts
        return 0
    return info.state.messages


async def until_consuming(bus: Bus) -> None:
    """Until the audit service's durable consumer is there, waiting for messages."""
    for _ in range(300):
        try:
            info = await bus.js.consumer_info(subjects.stream_name(PREFIX), "audit")
            if info.num_waiting > 0:
                return
        except Exception:  # noqa: BLE001 - made as the service starts
            pass
        await asyncio.sleep(0.1)
    raise AssertionError("the audit service did not start")


async def test_audit_killed_while_publishing_when_started_again_stores_each_record_once(
    tmp_path: Path,
) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    url = await server.start()
    bus = await Bus.open(url, PREFIX, "test")
    proc = audit_process(url, tmp_path / "home")
    try:
        history = copies()
        expected = RECORDS * COPIES
        await until_consuming(bus)

        async def publish() -> None:
            for event in history:
                await bus.publisher.publish(event)

        publishing = asyncio.create_task(publish())
        for _ in range(600):  # killed once it has published some of its records
            if await records_stored(bus) > 0:
                break
            await asyncio.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = await records_stored(bus)
        await publishing
        proc = audit_process(url, tmp_path / "home")
        for _ in range(600):
            if await records_stored(bus) >= expected:
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # a duplicate published late would show now
        assert killed_at > 0, "the audit service was killed before it published anything"
        assert await records_stored(bus) == expected
        sub = await bus.js.subscribe(
            subjects.audit_records(PREFIX),
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            stream=subjects.audit_stream_name(PREFIX),
        )
        seen = Counter()
        for _ in range(expected):
            msg = await sub.next_msg(timeout=5)
            seen[decode_audit(msg.data).event_id] += 1
        await sub.unsubscribe()
        assert len(seen) == expected and set(seen.values()) == {1}
        detail = await query_run(bus.nc, PREFIX, f"run-ring-{COPIES - 1}")
        assert len(detail.audit_records) > 0
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        await bus.close()
        await server.stop()
