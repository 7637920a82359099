"""Async client for the Blender bridge child process.

The executor never imports bpy: it drives ``python -m services.bridge``
through this client over JSON-RPC on stdio. Calls are serialized (the bridge
is single-threaded anyway) and a call that overruns its timeout kills the
child, because a hung Blender cannot be interrupted any other way.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from contracts.bridge import (
    BlenderProfile,
    CallMeta,
    CallToolResult,
    Empty,
    Fingerprint,
    FullFingerprintParams,
    GltfExport,
    GltfParams,
    HashScheme,
    Implementation,
    InitializeParams,
    InitializeResult,
    LoadParams,
    Notification,
    Preview,
    PreviewParams,
    Reply,
    Request,
    SavedScene,
    SaveParams,
    SceneHash,
    SummaryParams,
    ToolCall,
    ToolList,
    ToolResult,
)
from contracts.exports import ExportParams, SceneExported
from contracts.inspection import SceneInspection
from contracts.nodes import NodeCatalog
from contracts.scenes import SceneSummary
from contracts.views import AssetImported, AssetParams, ViewParams
from services.executor.domain.ports import BridgeCrashed, BridgeError

log = logging.getLogger("blendmesh.bridge")

PROJECT_ROOT = Path(__file__).resolve().parents[3]
STREAM_LIMIT = 64 * 1024 * 1024  # scene snapshots are single, possibly large, lines
CLOSE_TIMEOUT = 5.0
_R = TypeVar("_R", bound=msgspec.Struct)
_T = TypeVar("_T")
_reply = msgspec.json.Decoder(Reply)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the executor dies, the
    # kernel kills the bridge instead of leaving an orphaned Blender.
    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class BridgeProcess:
    """One bridge child process and the request/response channel to it."""

    def __init__(
        self,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        call_timeout: float = 30.0,
        nice: int = 0,
    ) -> None:
        self.python = python
        self.env = dict(os.environ if env is None else env)
        self.call_timeout = call_timeout
        self.nice = nice  # added to the child's niceness: >0 yields the CPU to others
        self._profile: BlenderProfile | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_task: asyncio.Task[None] | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._lock = asyncio.Lock()
        self._next_id = 1
        self._closed = False

    @property
    def alive(self) -> bool:
        """True while the child is running and usable."""
        return self._proc is not None and self._proc.returncode is None and not self._closed

    @property
    def pid(self) -> int | None:
        """The child's process id, None before it starts."""
        return None if self._proc is None else self._proc.pid

    @property
    def profile(self) -> BlenderProfile:
        """What the child's Blender can do, as its handshake said."""
        if self._profile is None:
            raise BridgeError("bridge not started")
        return self._profile

    async def start(self) -> InitializeResult:
        """Spawn the bridge and perform the MCP handshake; returns the initialize result."""
        if self._proc is not None:
            raise BridgeError("bridge already started")
        env = dict(self.env)
        # cwd-independent: the project root must be importable in the child.
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
        self._proc = await asyncio.create_subprocess_exec(
            self.python,
            "-m",
            "services.bridge",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            limit=STREAM_LIMIT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        if self.nice > 0:
            os.setpriority(
                os.PRIO_PROCESS, self._proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + self.nice
            )
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        params = InitializeParams(
            client_info=Implementation(name="blendmesh-executor", version="1")
        )
        result = await self.request("initialize", InitializeResult, params)
        await self._notify("notifications/initialized")
        self._profile = result.blender_profile
        return result

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while True:
            try:
                line = await self._proc.stderr.readline()
            except ValueError:  # an over-long line was discarded; keep draining
                continue
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr_tail.append(text)
            log.info("%s", text)

    async def _send(self, message: Request | Notification) -> None:
        if not self.alive:
            raise BridgeCrashed(self._crash_message("bridge is not running"))
        assert self._proc is not None and self._proc.stdin is not None
        # json, not msgspec: msgspec writes non-finite floats as null, and the bridge must
        # see them to refuse them.
        line = json.dumps(msgspec.to_builtins(message)).encode("utf-8") + b"\n"
        try:
            self._proc.stdin.write(line)
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as err:
            raise BridgeCrashed(self._crash_message(f"bridge stdin closed: {err}")) from None

    async def _notify(self, method: str) -> None:
        async with self._lock:
            await self._send(Notification(method=method))

    async def _roundtrip(self, message: Request) -> Reply:
        await self._send(message)
        assert self._proc is not None and self._proc.stdout is not None
        while True:
            try:
                line = await self._proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError) as err:
                await self._kill()
                raise BridgeError(f"bridge response too large or malformed: {err}") from None
            if not line:
                await self._reap()
                raise BridgeCrashed(self._crash_message("bridge closed its stdout"))
            try:
                response = _reply.decode(line)
            except msgspec.DecodeError:
                log.warning("bridge sent a line that is not a JSON-RPC reply: %r", line[:200])
                continue
            if response.id == message.id:
                return response
            log.warning("bridge sent an unexpected message: %r", line[:200])

    async def request(
        self,
        method: str,
        returns: type[_R],
        params: msgspec.Struct | None = None,
        timeout: float | None = None,
    ) -> _R:
        """Send one JSON-RPC request and decode its result into ``returns``; raises
        BridgeError on an error reply or a result that does not match."""
        async with self._lock:
            msg_id = self._next_id
            self._next_id += 1
            message = Request(
                id=msg_id, method=method, params=Empty() if params is None else params
            )
            limit = self.call_timeout if timeout is None else timeout
            try:
                response = await bounded(self._roundtrip(message), limit)
            except TimeoutError:
                # A busy Blender cannot be interrupted; killing it is the only way back.
                await self._kill()
                raise TimeoutError(
                    f"bridge call {method} exceeded {limit}s; bridge killed"
                ) from None
        if response.error is not None:
            raise BridgeError(f"{method}: {response.error.message}", response.error.code)
        try:
            return msgspec.json.decode(response.result, type=returns)
        except msgspec.DecodeError as err:
            raise BridgeError(f"{method}: unexpected result: {err}") from None

    async def list_tools(self) -> list[dict[str, Any]]:
        """MCP tool descriptors, sorted by name."""
        return (await self.request("tools/list", ToolList)).tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        mcp_call_id: str,
        timeout: float | None = None,
    ) -> ToolResult:
        """Run a tool; returns the ToolResult (MCP structuredContent)."""
        call = ToolCall(name=name, arguments=arguments, meta=CallMeta(mcp_call_id=mcp_call_id))
        return (await self.request("tools/call", CallToolResult, call, timeout)).structured_content

    async def reset(self) -> str:
        """Empty factory scene; returns its hash."""
        return (await self.request("blendmesh/scene.reset", SceneHash)).hash

    async def load(self, path: str) -> str:
        """Open a .blend file; returns the scene hash."""
        return (await self.request("blendmesh/scene.load", SceneHash, LoadParams(path=path))).hash

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        """Save a copy of the scene."""
        params = SaveParams(path=path, compress=compress, checked=checked)
        return await self.request("blendmesh/scene.save", SavedScene, params)

    async def verify(self) -> str:
        """The full scene hash, checked against the digest cache."""
        return (await self.request("blendmesh/scene.verify", SceneHash)).hash

    async def summary(self, scene_id: str) -> SceneSummary:
        """What planners are told of the scene."""
        params = SummaryParams(scene_id=scene_id)
        return await self.request("blendmesh/scene.summary", SceneSummary, params)

    async def fingerprint(self) -> str:
        """Current scene hash."""
        return (await self.request("blendmesh/scene.fingerprint", Fingerprint)).hash

    async def fingerprint_full(self, scheme: HashScheme = "digests") -> str:
        """Current scene hash recomputed in full, not from the bridge's digest cache."""
        params = FullFingerprintParams(scheme=scheme)
        return (await self.request("blendmesh/scene.fingerprint_full", Fingerprint, params)).hash

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        """Render the scene to a PNG at ``path``."""
        params = PreviewParams(path=path, width=width, height=height)
        return await self.request("blendmesh/scene.render_preview", Preview, params)

    async def export_gltf(self, path: str, max_bytes: int) -> GltfExport:
        """Write the scene's meshes to ``path`` as GLB, refused over ``max_bytes``."""
        params = GltfParams(path=path, max_bytes=max_bytes)
        return await self.request("blendmesh/scene.export_gltf", GltfExport, params)

    async def inspect(self) -> SceneInspection:
        """Describe the scene for the inspection artifact (evaluates its depsgraph)."""
        return await self.request("blendmesh/scene.inspect", SceneInspection)

    async def render_view(self, view: ViewParams) -> Preview:
        """Render one view of the scene to ``view.path``; the scene is left as it was."""
        return await self.request("blendmesh/scene.render_view", Preview, view)

    async def import_asset(self, asset: AssetParams) -> AssetImported:
        """Import an asset file into a collection of the scene."""
        return await self.request("blendmesh/scene.import_asset", AssetImported, asset)

    async def export_scene(self, want: ExportParams) -> SceneExported:
        """Write the scene as a GLB, FBX, OBJ, USD or STL file at ``want.path``."""
        return await self.request("blendmesh/scene.export", SceneExported, want)

    async def node_catalog(self) -> NodeCatalog:
        """Every node type the bridge's Blender accepts in a Geometry Nodes tree."""
        return await self.request("blendmesh/node_catalog", NodeCatalog)

    async def exited(self) -> int:
        """Wait until the child ends, however it ends; its exit code."""
        if self._proc is None:
            raise BridgeError("bridge not started")
        return await self._proc.wait()

    async def close(self) -> None:
        """Ask the bridge to shut down, then make sure it is gone. Safe to call twice."""
        if self._proc is None:
            self._closed = True
            return
        if self.alive:
            try:
                await self.request("shutdown", Empty, timeout=CLOSE_TIMEOUT)
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
                await bounded(self._proc.wait(), CLOSE_TIMEOUT)
            except (TimeoutError, BridgeError):
                pass
        self._closed = True
        await self._kill()

    async def _kill(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        await self._reap()

    async def _reap(self) -> None:
        """Wait for the child to be gone: killed if it has not exited within
        CLOSE_TIMEOUT (one that closed its stdout may still be shutting down), and never
        waited for without bound, so no close or crash report hangs on it."""
        if self._proc is None:
            return
        try:
            await bounded(self._proc.wait(), CLOSE_TIMEOUT)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            try:
                await bounded(self._proc.wait(), CLOSE_TIMEOUT)
            except TimeoutError:
                log.error("bridge process %s did not end after SIGKILL", self._proc.pid)
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        if self._stderr_task is not None:
            # Let the drain finish reading what the child wrote before dying.
            await finish(self._stderr_task, 1.0)

    def _crash_message(self, what: str) -> str:
        """What a crash says to the caller. The message reaches failure contracts, which
        API users and the model read; Blender's stderr (paths, tracebacks, whatever a tool
        printed) goes to this process's log only."""
        code = None if self._proc is None else self._proc.returncode
        if self._stderr_tail:
            tail = " | ".join(self._stderr_tail)
            log.warning("bridge: %s (exit code %s); its stderr ended with: %s", what, code, tail)
        return f"{what} (exit code {code}); see the executor's log"


async def bounded(awaitable: Awaitable[_T], seconds: float) -> _T:
    """``awaitable``'s result, or TimeoutError after ``seconds``. Not ``asyncio.wait_for``:
    on Python 3.11 it returns the result when its caller is cancelled just as the result
    arrives, swallowing the cancellation; a supervisor cancelling its idle loop while that
    loop closed a bridge whose process had just exited then waited for the loop for ever."""
    async with asyncio.timeout(seconds):
        return await awaitable


async def finish(task: asyncio.Task[Any], within: float) -> None:
    """Give ``task`` ``within`` seconds to end, then cancel it. Its own end (an error, a
    cancellation) is not the caller's; the caller's cancellation always goes through,
    since a close that swallowed it would leave its canceller waiting for ever."""
    await asyncio.wait({task}, timeout=within)
    if not task.done():
        task.cancel()
    elif not task.cancelled() and task.exception() is not None:
        log.warning("%s ended with an error: %r", task.get_name(), task.exception())
