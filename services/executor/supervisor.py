"""Keeps one bridge process alive for the executor, restarting it after a crash or hang."""

from __future__ import annotations

import logging
from typing import Any

from contracts.bridge import (
    BlenderProfile,
    GltfExport,
    HashScheme,
    Preview,
    SavedScene,
    ToolResult,
)
from contracts.inspection import SceneInspection
from contracts.nodes import NodeCatalog
from services.executor.bridge_client import BridgeProcess

log = logging.getLogger("blendmesh.executor")


class SupervisedBridge:
    """The ``Bridge`` port over a ``BridgeProcess`` that can be replaced.

    A bridge found dead before a call (it crashed between operations) is replaced first,
    so one crash never leaves the executor unable to serve the next run.
    """

    def __init__(self, call_timeout: float, nice: int = 0) -> None:
        self._call_timeout = call_timeout
        self._nice = nice
        self._proc = BridgeProcess(call_timeout=call_timeout, nice=nice)
        self._profile: BlenderProfile | None = None
        self.restarts = 0

    @property
    def profile(self) -> BlenderProfile:
        """What the bridge's Blender can do, as the first handshake said: a restart runs the
        same Blender, and a failed restart must not make every plan look unsupported."""
        if self._profile is None:
            raise RuntimeError("the bridge has not been started")
        return self._profile

    @property
    def alive(self) -> bool:
        """Whether its Blender runs now; a dead one is started again before the next call."""
        return self._proc.alive

    async def start(self) -> list[dict[str, Any]]:
        """Start the bridge; returns its MCP tool descriptors."""
        init = await self._proc.start()
        self._profile = init.blender_profile
        return await self._proc.list_tools()

    async def restart(self) -> None:
        await self._proc.close()
        self._proc = BridgeProcess(call_timeout=self._call_timeout, nice=self._nice)
        await self._proc.start()
        self.restarts += 1
        log.warning("restarted the Blender bridge (%d restarts)", self.restarts)

    async def _live(self) -> BridgeProcess:
        if not self._proc.alive:
            await self.restart()
        return self._proc

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        return await (await self._live()).call_tool(name, arguments, mcp_call_id, timeout=timeout)

    async def reset(self) -> str:
        return await (await self._live()).reset()

    async def load(self, path: str) -> str:
        return await (await self._live()).load(path)

    async def save(self, path: str, compress: bool = False) -> SavedScene:
        return await (await self._live()).save(path, compress=compress)

    async def fingerprint(self) -> str:
        return await (await self._live()).fingerprint()

    async def fingerprint_full(self, scheme: HashScheme = "digests") -> str:
        return await (await self._live()).fingerprint_full(scheme)

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        return await (await self._live()).render_preview(path, width, height)

    async def export_gltf(self, path: str, max_bytes: int) -> GltfExport:
        return await (await self._live()).export_gltf(path, max_bytes)

    async def inspect(self) -> SceneInspection:
        return await (await self._live()).inspect()

    async def node_catalog(self) -> NodeCatalog:
        return await (await self._live()).node_catalog()

    async def close(self) -> None:
        await self._proc.close()
