"""Another user's one-operation run alone and under each flood, and a Blender bridge's
peak memory under each small file that once made it allocate gigabytes.

    .venv/bin/python bench/fairness.py [--runs 10] [--flood 1500]

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
from contracts.views import AssetParams
from services.doors.cli.users import new_seed, public_key
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from services.runtime import access, users

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
        "run_id": f"run-{uuid.uuid4().hex[:16]}", "request_id": plan["request_id"],
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

    async def run(self, scene: str, plan: dict[str, Any]) -> dict[str, Any]:
        """Submit and wait on the feed until the run ends or waits for a person."""
        request = requested(self.name, scene, plan)
        sub = await self.nc.subscribe(subjects.feed(PREFIX, self.name, request["run_id"]))
        try:
            answer = await self.ask("run.submit", json.dumps(request).encode())
            if not answer["ok"]:
                return answer
            while True:
                event = json.loads((await sub.next_msg(timeout=300)).data)
                if event["type"] in ("run.completed", "run.failed", "run.approval_requested"):
                    return event
        finally:
            await sub.unsubscribe()


async def _quiet(exc: Exception) -> None:
    """Refused logins until the server admits the new key."""


async def login(url: str, name: str, seed: bytes) -> Login:
    for _ in range(100):
        nc = Client()
        try:
            await nc.connect(url, nkeys_seed_str=seed.decode(), error_cb=_quiet,
                             inbox_prefix=access.user_inbox_prefix(name), allow_reconnect=False,
                             max_outstanding_pings=10)  # fmt: skip
            return Login(name, nc)
        except NatsError:
            await nc.close()
            await asyncio.sleep(0.1)
    raise SystemExit(f"{name} was never admitted by the mesh's nats-server")


async def bob_p50(bob: Login, runs: int) -> float:
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        cube = op("object.create", {"primitive": "cube", "name": f"B{uuid.uuid4().hex[:8]}"})
        done = await bob.run("bobscene", cube)
        seconds.append(time.perf_counter() - started)
        assert done.get("type") == "run.completed", done
    return statistics.median(seconds)


async def stage_flood(mallory: Login, count: int) -> list[dict[str, Any]]:
    return await asyncio.gather(*(mallory.ask("files.stage", STAGED) for _ in range(count)))


async def list_flood(mallory: Login, count: int) -> list[dict[str, Any]]:
    return await asyncio.gather(*(mallory.ask("runs.list", b"{}") for _ in range(count)))


async def approval_flood(mallory: Login, count: int) -> list[dict[str, Any]]:
    plans = [op("object.delete", {"name": "Bait"}, "destructive") for _ in range(count)]
    bodies = [json.dumps(requested("mallory", "malscene", plan)).encode() for plan in plans]
    return await asyncio.gather(*(mallory.ask("run.submit", b) for b in bodies))


def refused(answers: list[dict[str, Any]]) -> int:
    return sum(1 for a in answers if not a.get("ok") and a["error"]["code"] == "UNAVAILABLE")


ATTACKS: dict[str, Callable[[Login, int], Awaitable[list[dict[str, Any]]]]] = {
    "files.stage": stage_flood,
    "runs.list": list_flood,
    "approvals": approval_flood,
}


FLOOD_SECONDS = 120.0  # the most one attacker process floods, whatever bob is doing


def attack(url: str, seed: bytes, name: str, count: int, heard: Any, stop: Any) -> None:
    """mallory's flood, in a process of her own (as from another machine, so bob's client
    does not share her event loop): ``count`` requests at once, again and again until
    ``stop`` is set. Puts "on" on ``heard`` as she starts, then (refused, sent, seconds)."""

    async def flood() -> None:
        mallory = await login(url, "mallory", seed)
        heard.put("on")
        started = time.perf_counter()
        answers: list[dict[str, Any]] = []
        while not stop.is_set() and time.perf_counter() - started < FLOOD_SECONDS:
            answers += await ATTACKS[name](mallory, count)
        heard.put((refused(answers), len(answers), time.perf_counter() - started))
        await mallory.nc.close()

    asyncio.run(flood())


async def floods(url: str, seeds: dict[str, bytes], runs: int, count: int) -> None:
    bob = await login(url, "bob", seeds["bob"])
    mallory = await login(url, "mallory", seeds["mallory"])
    await bob_p50(bob, 2)  # the Blender starts; not measured
    await mallory.run("malscene", op("object.create", {"primitive": "cube", "name": "Bait"}))
    await mallory.nc.close()
    alone = await bob_p50(bob, runs)
    print(f"bob's one-operation run alone, p50: {alone * 1000:.0f} ms")
    spawn = multiprocessing.get_context("spawn")
    for name in ATTACKS:
        heard, stop = spawn.Queue(), spawn.Event()
        attacker = spawn.Process(
            target=attack, args=(url, seeds["mallory"], name, count, heard, stop)
        )
        attacker.start()
        assert await asyncio.to_thread(heard.get, True, 120) == "on"
        await asyncio.sleep(0.5)  # the first of her requests are under way
        under = await bob_p50(bob, runs)
        stop.set()
        got_refused, sent, took = await asyncio.to_thread(heard.get, True, 600)
        await asyncio.to_thread(attacker.join, 60)
        print(
            f"under a {name} flood ({sent} requests in {took:.1f} s, {got_refused} refused "
            f"at once): bob p50 {under * 1000:.0f} ms"
        )
        print(f"under a {name} flood / alone: {under / alone:.2f}")
        await asyncio.sleep(2)  # mallory's share refills
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir(mode=0o700)
        seeds = {name: new_seed() for name in ("bob", "mallory")}
        for name, seed in seeds.items():
            users.add(home / users.FILE_NAME, name, public_key(seed))
        proc = subprocess.Popen(
            [BLENDMESH, "--home", str(home), "up", "--port", "0"],
            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
            env={k: v for k, v in os.environ.items() if k != "NATS_URL"},
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            banner = proc.stderr.readline()
            url = banner.split("NATS_URL=", 1)[1].split()[0]
            asyncio.run(floods(url, seeds, args.runs, args.flood))
        finally:
            proc.send_signal(2)
            proc.wait(timeout=120)
        asyncio.run(bombs(Path(tmp)))


if __name__ == "__main__":
    main()
