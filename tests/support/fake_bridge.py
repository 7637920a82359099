"""An in-memory Blender bridge for unit tests of the executor's domain logic.

It keeps the real bridge's contract (ToolResult envelopes, ``mutated`` on partial
changes, hashes that change with the scene) without Blender, so the same behavioural
tests run against both (tests/unit/executor/test_plan_runner.py).
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import struct
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from contracts.bridge import GltfExport, Preview, SavedScene, ToolErrorCode, ToolResult
from contracts.inspection import InspectedModifier, InspectedObject, SceneInspection
from contracts.scenes import SceneSummary, summarize


def _ok(data: dict[str, Any], mutated: bool = True) -> ToolResult:
    return ToolResult(ok=True, data=data, mutated=mutated, determinism_class="deterministic")


def _err(code: ToolErrorCode, message: str, mutated: bool = False) -> ToolResult:
    return ToolResult(ok=False, error_code=code, message=message, mutated=mutated)


class FakeBridge:
    def __init__(self) -> None:
        self.scene: dict[str, dict[str, Any]] = {}
        self.restarts = 0
        self.calls: list[str] = []
        # Awaited as each tool call begins: a test acts while an operation is in hand.
        self.on_call: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None

    @property
    def generation(self) -> int:
        return 1 + self.restarts  # a restart is a new process, holding an empty scene

    def _hash(self) -> str:
        return hashlib.sha256(json.dumps(self.scene, sort_keys=True).encode()).hexdigest()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        self.calls.append(mcp_call_id)
        if self.on_call is not None:
            await self.on_call(name, arguments)
        if timeout is not None and timeout < 0.01:
            self.scene["__partial__"] = {}
            raise TimeoutError
        args = arguments
        match name:
            case "scene.snapshot":
                objects = [
                    {"name": k, "location": v["location"]} for k, v in sorted(self.scene.items())
                ]
                return _ok({"objects": objects, "hash": self._hash()}, mutated=False)
            case "object.create":
                obj = args.get("name", "Cube")
                if obj in self.scene:
                    return _err("conflict", f"an object named {obj!r} exists")
                self.scene[obj] = {"location": list(args.get("location", [0, 0, 0])), "mods": {}}
                return _ok({"name": obj})
            case "object.transform" | "object.delete" | "modifier.add":
                key = args.get("name") or args.get("object")
                if key not in self.scene:
                    return _err("not_found", f"no object named {key!r}")
                if name == "object.transform":
                    self.scene[key]["location"] = list(args["location"])
                elif name == "object.delete":
                    del self.scene[key]
                else:
                    self.scene[key]["mods"][args["type"]] = {}
                    for prop, value in args.get("properties", {}).items():
                        if not isinstance(value, int | float):
                            return _err(
                                "invalid_input", f"property {prop!r}: bad value", mutated=True
                            )
                        self.scene[key]["mods"][args["type"]][prop] = value
                return _ok({"name": key})
        return _err("not_found", f"no tool {name!r}")

    async def reset(self) -> str:
        self.scene = {}
        return self._hash()

    async def load(self, path: str) -> str:
        self.scene = json.loads(await asyncio.to_thread(Path(path).read_text))
        return self._hash()

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        size = await asyncio.to_thread(_write, Path(path), json.dumps(self.scene).encode())
        return SavedScene(path=path, bytes=size, hash=self._hash())

    async def verify(self) -> str:
        return self._hash()

    async def summary(self, scene_id: str) -> SceneSummary:
        snapshot = await self.call_tool("scene.snapshot", {}, "summary")
        assert snapshot.data is not None
        return summarize(scene_id, snapshot.data)

    async def fingerprint(self) -> str:
        return self._hash()

    async def fingerprint_full(self, scheme: str = "digests") -> str:
        return self._hash()

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        await asyncio.to_thread(_write, Path(path), blank_png(width, height))
        return Preview(path=path, width=width, height=height, engine="fake")

    async def export_gltf(self, path: str, max_bytes: int) -> GltfExport:
        """A GLB header and nothing in it: the fake has no geometry to export."""
        glb = b"glTF" + (2).to_bytes(4, "little") + (12).to_bytes(4, "little")
        await asyncio.to_thread(_write, Path(path), glb)
        return GltfExport(path=path, bytes=len(glb), objects=len(self.scene))

    async def inspect(self) -> SceneInspection:
        objects = [
            InspectedObject(
                name=name,
                type="MESH",
                location=[float(v) for v in obj["location"]],
                modifiers=[InspectedModifier(name=t.title(), type=t) for t in obj["mods"]],
            )
            for name, obj in sorted(self.scene.items())
            if not name.startswith("__")  # a timed-out call's half-made change
        ]
        return SceneInspection(blender_version="fake", objects=objects)

    async def restart(self) -> None:
        self.scene = copy.deepcopy({})
        self.restarts += 1


def _write(path: Path, data: bytes) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return len(data)


def blank_png(width: int, height: int) -> bytes:
    """A valid, all-white RGB PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff" * 3 * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
