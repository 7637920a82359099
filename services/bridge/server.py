"""JSON-RPC 2.0 / MCP dispatch for the bridge (spec 001 Phase 0).

One JSON object per line in, one per line out. Every failure of a single
message becomes a JSON-RPC error envelope; nothing a client sends may end the
loop except ``shutdown`` or EOF.
"""

from __future__ import annotations

import json
import logging
import platform
import time
from collections.abc import Callable
from typing import IO, Any, TypeVar

import bpy
import msgspec

from contracts.bridge import (
    INVALID_PARAMS,
    PROTOCOL_VERSION,
    BlenderProfile,
    CallToolResult,
    Empty,
    ErrorObject,
    ErrorResponse,
    FullFingerprintParams,
    GltfExport,
    GltfParams,
    Implementation,
    InitializeParams,
    InitializeResult,
    LoadParams,
    Preview,
    PreviewParams,
    RequestId,
    Response,
    SavedScene,
    SaveParams,
    SummaryParams,
    TextContent,
    ToolCall,
    ToolList,
)
from contracts.errors import BlendmeshError
from contracts.exports import ExportParams
from contracts.inspection import SceneInspection
from contracts.renders import FrameParams
from contracts.scenes import SceneSummary
from contracts.views import AssetParams, ViewParams
from services.bridge import heap, registry, touched
from services.bridge.imports import assets
from services.bridge.inspection import inspect
from services.bridge.nodes import node_catalog
from services.bridge.output import exports, gltf, preview, render_frames
from services.bridge.scene import digests

from .said import plain
from .tools import python as python_tools
from .tools import scene

log = logging.getLogger("blendmesh.bridge")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = (-32700, -32600, -32601, -32603)
SERVER_ERROR = -32000  # blendmesh/scene.* failures (missing file, unwritable path)
# Methods that never change the scene. Any other request (every tool call, a render that
# may place a camera) marks the digest cache as resting on declarations (ADR 0032).
READS = frozenset({
    "initialize", "ping", "tools/list", "blendmesh/scene.save", "blendmesh/scene.verify",
    "blendmesh/scene.summary", "blendmesh/scene.fingerprint",
    "blendmesh/scene.fingerprint_full", "blendmesh/scene.snapshot_full",
    "blendmesh/scene.inspect", "blendmesh/scene.inspect_full", "blendmesh/node_catalog",
})  # fmt: skip


class RpcError(BlendmeshError):
    """A JSON-RPC error to send back to the caller."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _engines() -> list[str]:
    # The engine enum is dynamic and RNA only exposes its static default, so
    # probe candidate identifiers by assignment and restore the original.
    render = bpy.context.scene.render
    original = render.engine
    candidates = {"BLENDER_EEVEE", "BLENDER_WORKBENCH", "CYCLES", original}
    stack = list(bpy.types.RenderEngine.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if getattr(cls, "bl_idname", None):
            candidates.add(cls.bl_idname)
    engines = []
    for ident in sorted(candidates):
        try:
            render.engine = ident
            engines.append(ident)
        except TypeError:
            pass
    render.engine = original
    return engines


def blender_profile() -> BlenderProfile:
    """What this Blender can do; the executor gates tools and policies on it."""
    major, minor, patch = bpy.app.version
    return BlenderProfile(
        version=f"{major}.{minor}.{patch}",
        version_tuple=(major, minor, patch),
        background=bool(bpy.app.background),
        engines=_engines(),
        python=platform.python_version(),
        # Python steps run only where the OS sandbox starts (docs/python-steps.md).
        sandbox="bubblewrap" if python_tools.POOL.check() is None else "none",
    )


# Results written by msgspec rather than the json module: a commit of a 2,000-object scene
# waits for its inspection (1 MB) and summary (0.6 MB), which the json module framed in
# 15-20 ms each (56 when the copy it makes first set off the garbage collector) and msgspec
# in 2-3. msgspec writes a non-finite float as null, never as a number: where the result's
# type wants a number the executor's typed decode refuses it, as the json module's error
# refused the whole result before; where it allows none (a material's metallic, a socket
# default, a modifier's properties) it reads as not recorded.
MSGSPEC_FRAMED = (SceneInspection, SceneSummary)

_P = TypeVar("_P", bound=msgspec.Struct)
Handler = Callable[[dict[str, Any]], msgspec.Struct]


def _params(params: dict[str, Any], kind: type[_P]) -> _P:
    """Decode a method's params, or refuse them naming the field that is wrong."""
    try:
        return msgspec.convert(params, kind)
    except msgspec.ValidationError as err:
        raise RpcError(INVALID_PARAMS, f"invalid params: {err}") from None


class Server:
    """Dispatches parsed requests to handlers and frames responses."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.running = True
        self.blender_version: tuple[int, ...] = tuple(bpy.app.version)
        self._profile: BlenderProfile | None = None
        digests.install()
        self.methods: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": lambda p: Empty(),
            "tools/list": lambda p: ToolList(tools=[s.to_mcp() for s in registry.list_specs()]),
            "tools/call": self._tools_call,
            "blendmesh/scene.reset": lambda p: scene.reset(),
            "blendmesh/scene.load": lambda p: scene.load(_params(p, LoadParams).path),
            "blendmesh/scene.save": self._save,
            "blendmesh/scene.verify": lambda p: scene.verify(),
            "blendmesh/scene.summary": lambda p: scene.summary(_params(p, SummaryParams).scene_id),
            "blendmesh/scene.fingerprint": lambda p: scene.scene_fingerprint(),
            "blendmesh/scene.fingerprint_full": lambda p: scene.full_fingerprint(
                _params(p, FullFingerprintParams).scheme
            ),
            "blendmesh/scene.snapshot_full": lambda p: scene.full_snapshot(),
            "blendmesh/scene.render_preview": self._render_preview,
            "blendmesh/scene.export_gltf": self._export_gltf,
            "blendmesh/scene.export": lambda p: exports.export_scene(_params(p, ExportParams)),
            "blendmesh/scene.inspect": lambda p: inspect.inspect(),
            "blendmesh/scene.inspect_full": lambda p: inspect.inspect(full=True),
            "blendmesh/scene.render_view": lambda p: preview.render_view(_params(p, ViewParams)),
            "blendmesh/scene.render_frame": lambda p: render_frames.render_frame(
                _params(p, FrameParams)
            ),
            "blendmesh/scene.import_asset": lambda p: assets.import_asset(_params(p, AssetParams)),
            "blendmesh/node_catalog": lambda p: node_catalog.node_catalog(),
            "shutdown": self._shutdown,
        }

    def _initialize(self, params: dict[str, Any]) -> InitializeResult:
        client = _params(params, InitializeParams).client_info
        log.debug("initialized by %s %s", client.name, client.version)
        if self._profile is None:
            self._profile = blender_profile()
        return InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            server_info=Implementation(name="blendmesh-bridge", version="1"),
            capabilities={"tools": {}},
            blender_profile=self._profile,
        )

    def _tools_call(self, params: dict[str, Any]) -> CallToolResult:
        call = _params(params, ToolCall)
        started = time.perf_counter()
        outcome = touched.call(call.name, call.arguments, self.blender_version)
        log.debug(
            "tool %s call_id=%s ok=%s %.1fms",
            call.name,
            call.meta.mcp_call_id,
            outcome.ok,
            (time.perf_counter() - started) * 1000,
        )
        return CallToolResult(
            content=[TextContent(text=msgspec.json.encode(outcome).decode())],
            structured_content=outcome,
            is_error=not outcome.ok,
        )

    def _save(self, params: dict[str, Any]) -> SavedScene:
        save = _params(params, SaveParams)
        return scene.save(save.path, save.compress, save.checked)

    def _render_preview(self, params: dict[str, Any]) -> Preview:
        want = _params(params, PreviewParams)
        return preview.render_preview(want.path, want.width, want.height, want.engine)

    def _export_gltf(self, params: dict[str, Any]) -> GltfExport:
        want = _params(params, GltfParams)
        return gltf.export_gltf(want.path, want.max_bytes)

    def _shutdown(self, params: dict[str, Any]) -> Empty:
        self.running = False
        return Empty()

    def handle_line(self, line: bytes | str) -> Response | ErrorResponse | None:
        """Process one framed message; returns the response, or None for notifications."""
        try:
            message = json.loads(line)
        except (ValueError, UnicodeDecodeError) as err:
            return _error(None, PARSE_ERROR, f"parse error: {err}")
        if not isinstance(message, dict):
            return _error(
                None, INVALID_REQUEST, "request must be a JSON object (batches are not supported)"
            )
        has_id = "id" in message
        msg_id = message.get("id")
        if has_id and (isinstance(msg_id, bool) or not isinstance(msg_id, (str, int, type(None)))):
            return _error(None, INVALID_REQUEST, "id must be a string, an integer or null")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            return _error(msg_id, INVALID_REQUEST, "expected jsonrpc '2.0' and a string method")
        params = message.get("params", {})
        if not isinstance(params, (dict, list)):
            return _error(msg_id, INVALID_REQUEST, "params must be an object or an array")
        if not has_id:
            # Notifications never execute: MCP only defines informational ones,
            # and a mutation nobody hears about could not be checkpointed.
            log.debug("notification %s ignored", method)
            return None
        handler = self.methods.get(method)
        if handler is None:
            return _error(msg_id, METHOD_NOT_FOUND, f"method not found: {method}")
        if not isinstance(params, dict):
            return _error(msg_id, INVALID_PARAMS, "params must be an object")
        if method not in READS:
            digests.CACHE.changing()
        heap.before(method)
        try:
            return Response(id=msg_id, result=handler(params))
        except RpcError as err:
            return _error(msg_id, err.code, err.message)
        except scene.SceneRefused as err:
            # Refused before the scene was touched: bad input, like params that do not decode.
            return _error(msg_id, SERVER_ERROR if err.changed else INVALID_PARAMS, plain(str(err)))
        except scene.SceneError as err:
            return _error(msg_id, SERVER_ERROR, plain(str(err)))
        except Exception as exc:
            log.exception("internal error in %s", method)
            return _error(msg_id, INTERNAL_ERROR, plain(f"{type(exc).__name__}: {exc}"))
        finally:
            heap.after(method)

    def write(self, response: Response | ErrorResponse) -> None:
        """Frame one response; non-finite floats would not be valid JSON for strict clients
        (msgspec would write them as null, so the json module frames the line, but for
        ``MSGSPEC_FRAMED`` results)."""
        if isinstance(response, Response) and isinstance(response.result, MSGSPEC_FRAMED):
            self.out.write(msgspec.json.encode(response).decode() + "\n")
            self.out.flush()
            return
        try:
            text = json.dumps(msgspec.to_builtins(response), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as err:
            failed = _error(response.id, INTERNAL_ERROR, f"unserializable result: {err}")
            text = json.dumps(msgspec.to_builtins(failed))
        self.out.write(text + "\n")
        self.out.flush()

    def serve(self, inp: IO[bytes]) -> None:
        """Read lines until EOF or shutdown."""
        while self.running:
            line = inp.readline()
            if not line:
                return
            if not line.strip():
                continue
            response = self.handle_line(line)
            if response is not None:
                self.write(response)


def _error(msg_id: RequestId, code: int, message: str) -> ErrorResponse:
    return ErrorResponse(id=msg_id, error=ErrorObject(code=code, message=message))
