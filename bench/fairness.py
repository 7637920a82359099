"""Another user's one-operation run alone and under each flood, and a Blender bridge's
peak memory under each small file that once made it allocate gigabytes.

    .venv/bin/python bench/fairness.py [--runs 10] [--flood 1500]
        [--attacks files.stage runs.list approvals] [--shapes asks fires] [--no-bombs]

The mesh is ``blendmesh up`` in a process of its own, as an operator runs it; bob and
mallory log in with NKeys of their own and use the bus door, as the attacks did. Each
flood is started and bob's runs measured while it lasts:

- ``files.stage``: mallory sends ``--flood`` requests of 400 KB at once, again and again
  (measured before the fix: 1,500 in 6.7 s held bob's ``runs.list`` for 25 s);
- ``runs.list``: as many small requests at once, again and again;
- approvals: mallory submits ``--flood`` runs that each wait for a person, again and again
  (1,100 were accepted in 8.6 s; bob's run then took 14.4 s).

mallory floods from a process of her own, as from another machine, so that bob's client
does not wait on her event loop; she still shares this machine's cores with the mesh.

The bombs each meet a fresh bridge (``blendmesh/scene.load`` and ``scene.import_asset``,
with no executor in front of it): the peak resident memory (VmHWM) after it, against the
bridge's own after start.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats.aio.client import Client
from nats.errors import Error as NatsError

from contracts import subjects
from contracts.door import run_prefix
from contracts.views import AssetParams
from services.doors.cli.users import new_seed, public_key
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from services.runtime.nats import access
from services.runtime.server import users

BLENDMESH = str(Path(sys.executable).parent / "blendmesh")
PREFIX = "blendmesh"
STAGED = b"x" * 400_000
GIB = 1024**3


def op(tool: str, args: dict[str, Any], level: str = "safe_write") -> dict[str, Any]:
    return {
        "request_id": f"bench-{uuid.uuid4().hex[:12]}",
        "operations": [
            {"operation_id": "a", "tool_name": tool, "args": args, "depends_on": [],
             "safety_level": level}
        ],
    }  # fmt: skip


def requested(user: str, scene: str, plan: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "run.requested", "event_id": str(uuid.uuid4()), "at": time.time(),
        "run_id": f"{run_prefix(user)}-{uuid.uuid4().hex[:16]}", "request_id": plan["request_id"],
        "thread_id": f"thread-{uuid.uuid4().hex[:16]}", "user": user, "scene_id": scene,
        "plan": plan, "planner": "plan",
    }  # fmt: skip


class Login:
    def __init__(self, name: str, nc: Client) -> None:
        self.name, self.nc = name, nc

    async def ask(self, verb: str, data: bytes, timeout: float = 120) -> dict[str, Any]:
        subject = subjects.door_api(PREFIX, self.name, verb)
        answer: dict[str, Any] = json.loads((await self.nc.request(subject, data, timeout)).data)
        return answer

    async def run(self, scene: str, plan: dict[str, Any], timeout: float = 300) -> dict[str, Any]:
        """Submit and wait on the feed until the run ends or waits for a person."""
        request = requested(self.name, scene, plan)
        sub = await self.nc.subscribe(subjects.feed(PREFIX, self.name, request["run_id"]))
        try:
            answer = await self.ask("run.submit", json.dumps(request).encode(), timeout)
            if not answer["ok"]:
                return answer
            while True:
                event = json.loads((await sub.next_msg(timeout=timeout)).data)
                if event["type"] in ("run.completed", "run.failed", "run.approval_requested"):
                    return event
        finally:
            await sub.unsubscribe()


async def _quiet(exc: Exception) -> None:
    """Refused logins until the server admits the new key."""


async def login(url: str, name: str, seed: bytes) -> Login:
    for _ in range(300):  # admitted within a second, or once a suspension has ended
        nc = Client()
        try:
            await nc.connect(url, nkeys_seed_str=seed.decode(), error_cb=_quiet,
                             inbox_prefix=access.user_inbox_prefix(name), allow_reconnect=False,
                             max_outstanding_pings=10)  # fmt: skip
            return Login(name, nc)
        except (NatsError, OSError):  # not admitted yet, refused or reset mid-login
            await nc.close()
            await asyncio.sleep(0.1)
    raise SystemExit(f"{name} was never admitted by the mesh's nats-server")


SUSPEND_SECONDS = 10  # the mesh's BLENDMESH_USER_SUSPEND_SECONDS here, as in a test
BOB_WAITS = 20.0  # seconds bob waits for one run under a flood before he counts it lost


async def bob_runs(bob: Login, runs: int, timeout: float = 300) -> tuple[float | None, int]:
    """The median of bob's runs that completed within ``timeout`` each, and how many did."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        cube = op("object.create", {"primitive": "cube", "name": f"B{uuid.uuid4().hex[:8]}"})
        try:
            done = await bob.run("bobscene", cube, timeout)
        except (NatsError, TimeoutError):
            continue
        if done.get("type") == "run.completed":
            seconds.append(time.perf_counter() - started)
    return (statistics.median(seconds) if seconds else None), len(seconds)


def stage_bodies(user: str, count: int) -> tuple[str, list[bytes]]:
    return "files.stage", [STAGED] * count


def list_bodies(user: str, count: int) -> tuple[str, list[bytes]]:
    return "runs.list", [b"{}"] * count


def approval_bodies(user: str, count: int) -> tuple[str, list[bytes]]:
    plans = [op("object.delete", {"name": "Bait"}, "destructive") for _ in range(count)]
    return "run.submit", [json.dumps(requested(user, "malscene", p)).encode() for p in plans]


ATTACKS: dict[str, Callable[[str, int], tuple[str, list[bytes]]]] = {
    "files.stage": stage_bodies,
    "runs.list": list_bodies,
    "approvals": approval_bodies,
}


FLOOD_SECONDS = 120.0  # the most one attacker process floods, whatever bob is doing


def attack(
    url: str, user: str, seed: bytes, name: str, shape: str, count: int, heard: Any, stop: Any
) -> None:
    """mallory's flood (as ``user``, a login of her own for each flood, so that one
    flood's suspension does not keep the next one out), in a process of her own (as from
    another machine, so bob's client does not share her event loop), again and again
    until ``stop`` is set: ``count`` requests at a time, each awaited a few seconds
    (``shape`` "asks", the measured attack) or published as fast as her connection takes
    them with her reply inbox, never waited for ("fires"). Puts "on" on ``heard`` as she
    starts, then (refused with a reason, answered at all, sent, seconds)."""

    async def flood() -> None:
        mallory = await login(url, user, seed)
        inbox = f"{access.user_inbox_prefix(user)}.flood"
        back = {"told": 0, "answered": 0}

        def heard_one(data: bytes) -> None:
            back["answered"] += 1
            answer = json.loads(data)
            if not answer.get("ok") and answer["error"]["code"] == "UNAVAILABLE":
                back["told"] += 1

        async def on_answer(msg: Any) -> None:
            heard_one(msg.data)

        async def asked(subject: str, body: bytes) -> None:
            with contextlib.suppress(NatsError, TimeoutError):
                heard_one((await mallory.nc.request(subject, body, timeout=5)).data)

        await mallory.nc.subscribe(inbox, cb=on_answer)
        verb, bodies = ATTACKS[name](user, count)
        subject = subjects.door_api(PREFIX, user, verb)
        heard.put("on")
        started = time.perf_counter()
        tally: dict[str, Any] = {"sent": 0, "shut_out": None}

        async def rounds() -> None:
            while time.perf_counter() - started < FLOOD_SECONDS:
                try:
                    if shape == "asks":
                        tally["sent"] += len(bodies)  # all at once, then awaited
                        await asyncio.gather(*(asked(subject, body) for body in bodies))
                    else:
                        for body in bodies:
                            await mallory.nc.publish(subject, body, reply=inbox)
                            tally["sent"] += 1
                        await mallory.nc.flush()
                except NatsError:  # the server closed her connection: she is suspended
                    tally["shut_out"] = time.perf_counter() - started
                    return
                if mallory.nc.is_closed:
                    tally["shut_out"] = time.perf_counter() - started
                    return

        # Her publishes can block for good once the server stops reading her connection;
        # the flood ends when bob is done all the same.
        flooding = asyncio.create_task(rounds())
        while not stop.is_set() and not flooding.done():  # noqa: ASYNC110 - another process's Event
            await asyncio.sleep(0.2)
        flooding.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await flooding
        if tally["shut_out"] is None and mallory.nc.is_closed:  # cut mid-round
            tally["shut_out"] = time.perf_counter() - started
        sent, shut_out = tally["sent"], tally["shut_out"]
        took = time.perf_counter() - started
        await asyncio.sleep(1)  # the last answers
        heard.put((back["told"], back["answered"], sent, took, shut_out))
        with contextlib.suppress(NatsError, TimeoutError):
            await asyncio.wait_for(mallory.nc.close(), 10)

    asyncio.run(flood())


def attacker_name(name: str, shape: str) -> str:
    return f"mallory-{name.replace('.', '-')}-{shape}"


async def floods(
    url: str, seeds: dict[str, bytes], floods_run: list[tuple[str, str]], runs: int, count: int
) -> None:
    bob = await login(url, "bob", seeds["bob"])
    await bob_runs(bob, 2)  # the Blender starts; not measured
    for name, shape in floods_run:  # each attacker's own Bait, for her approvals to ask about
        user = attacker_name(name, shape)
        mallory = await login(url, user, seeds[user])
        await mallory.run("malscene", op("object.create", {"primitive": "cube", "name": "Bait"}))
        await mallory.nc.close()
    alone, _ = await bob_runs(bob, runs)
    assert alone is not None
    print(f"bob's one-operation run alone, p50: {alone * 1000:.0f} ms")
    spawn = multiprocessing.get_context("spawn")
    for name, shape in floods_run:
        user = attacker_name(name, shape)
        heard, stop = spawn.Queue(), spawn.Event()
        attacker = spawn.Process(
            target=attack, args=(url, user, seeds[user], name, shape, count, heard, stop)
        )
        attacker.start()
        assert await asyncio.to_thread(heard.get, True, 120) == "on"
        await asyncio.sleep(0.5)  # the first of her requests are under way
        under, completed = await bob_runs(bob, runs, BOB_WAITS)
        stop.set()
        told, answered, sent, took, shut_out = await asyncio.to_thread(heard.get, True, 600)
        await asyncio.to_thread(attacker.join, 60)
        kind = f"{name} flood that {shape}"
        suspended = f", shut out after {shut_out:.1f} s" if shut_out is not None else ""
        print(
            f"under a {kind} ({sent:,} requests in {took:.1f} s, {sent / took:,.0f} a "
            f"second; {told:,} refused with a reason, {sent - answered:,} unanswered"
            f"{suspended}): bob's runs completed {completed} of {runs}"
            + (f", p50 {under * 1000:.0f} ms" if under is not None else ""),
            flush=True,
        )
        ratio = f"{under / alone:.2f}" if under is not None else "none completed"
        print(f"under a {kind} / alone: {ratio}", flush=True)
        await asyncio.sleep(3)  # the door catches up with what she left unanswered
    await bob.nc.close()


def peak_mib(pid: int | None) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def blend_bomb(path: Path, inflated: int) -> Path:
    import zstandard

    head = b"BLENDER17-01v0500" + struct.pack("<4siQqq", b"DATA", 0, 0, inflated, 1)
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as out, zstandard.ZstdCompressor(level=19).stream_writer(out) as z:
        z.write(head)
        for _ in range(inflated // len(chunk)):
            z.write(chunk)
    return path


def gltf_bomb(path: Path, count: int, backed: bool) -> Path:
    positions = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)
    accessor: dict[str, Any] = {"componentType": 5126, "count": count, "type": "VEC3"}
    if backed:
        accessor["bufferView"] = 0
    doc = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}], "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [{"byteLength": 36, "uri": "data:application/octet-stream;base64,"
                     + base64.b64encode(positions).decode()}],
        "bufferViews": [{"buffer": 0, "byteLength": 36}], "accessors": [accessor],
    }  # fmt: skip
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


async def bombs(folder: Path) -> None:
    cases: list[tuple[str, Path, Callable[[BridgeProcess, Path], Awaitable[Any]]]] = [
        (".blend, zstd, 4 GiB inside", blend_bomb(folder / "bomb.blend", 4 * GIB),
         lambda b, p: b.load(str(p))),
        ("glTF, count 3e9", gltf_bomb(folder / "count.gltf", 3_000_000_000, True),
         lambda b, p: b.import_asset(AssetParams(path=str(p), format="gltf", collection="B"))),
        ("glTF, 3e6 zeros", gltf_bomb(folder / "zeros.gltf", 3_000_000, False),
         lambda b, p: b.import_asset(AssetParams(path=str(p), format="gltf", collection="B"))),
    ]  # fmt: skip
    for name, path, attack in cases:
        bridge = BridgeProcess()
        await bridge.start()
        try:
            before = peak_mib(bridge.pid)
            started = time.perf_counter()
            try:
                await attack(bridge, path)
                said = "imported"
            except BridgeError as exc:
                said = "refused: " + str(exc).split(": ", 1)[-1][:90]
            took = time.perf_counter() - started
            print(
                f"bomb {name} ({path.stat().st_size:,} bytes): bridge peak "
                f"{peak_mib(bridge.pid):.0f} MiB (after start {before:.0f} MiB), "
                f"{took * 1000:.0f} ms, {said}"
            )
        finally:
            await bridge.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--flood", type=int, default=1500)
    parser.add_argument("--attacks", nargs="+", choices=list(ATTACKS), default=list(ATTACKS))
    parser.add_argument("--shapes", nargs="+", choices=["asks", "fires"], default=["asks", "fires"])
    parser.add_argument("--no-bombs", action="store_true", help="measure the floods only")
    args = parser.parse_args()
    floods_run = [(name, shape) for shape in args.shapes for name in args.attacks]
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        names = ["bob", *(attacker_name(name, shape) for name, shape in floods_run)]
        seeds = {name: new_seed() for name in names}
        for name, seed in seeds.items():
            users.add(home / users.FILE_NAME, name, public_key(seed))
        proc = subprocess.Popen(
            [BLENDMESH, "--home", str(home), "up", "--port", "0"],
            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
            env={
                **{k: v for k, v in os.environ.items() if k != "NATS_URL"},
                "BLENDMESH_USER_SUSPEND_SECONDS": str(SUSPEND_SECONDS),
            },
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            banner = proc.stderr.readline()
            url = banner.split("NATS_URL=", 1)[1].split()[0]
            asyncio.run(floods(url, seeds, floods_run, args.runs, args.flood))
        finally:
            proc.send_signal(2)
            proc.wait(timeout=120)
        if not args.no_bombs:
            asyncio.run(bombs(Path(tmp)))


if __name__ == "__main__":
    main()
