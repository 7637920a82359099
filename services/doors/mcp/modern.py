"""MCP 2026-07-28 beside 2025-11-25: one JSON-RPC request in, one answer out.

The 2026-07-28 revision has no ``initialize`` and no session: every request carries the
protocol version, the client's capabilities and its name in ``_meta``, and the server
sends the client no requests. ``answer`` serves such a request with the same tools,
resources and prompts as the 2025-11-25 server (``server.py``), over the same ``Door``:
it checks the request against the revision's schema (the ``mcp-types`` package's wire
models), calls the same handlers, and shapes their results for the revision. An approval
is a Multi Round-Trip Request (``mrtr.py``); a client declaring the tasks extension gets
its runs as tasks (``tasks.py``). Lists and reads carry ``ttlMs``/``cacheScope``; a
resource that is not there (or is another user's) is -32602, as the revision says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import mcp.types as types
import pydantic
from mcp.shared.exceptions import McpError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_INFO_META_KEY,
)
from mcp_types import methods as wire

from services.doors.mcp import cards, mrtr, prompts, tasks, tools
from services.doors.mcp.asking import CONSOLE_VAR
from services.doors.mcp.door import Door
from services.doors.mcp.envelope import (
    VERSION,
    VERSIONS,
    Refused,
    check_headers,
    error,
    version_of,
)
from services.doors.mcp.errors import ValidationError
from services.doors.mcp.server import (
    INSTRUCTIONS,
    LISTED,
    SERVER_NAME,
    SERVER_VERSION,
    Context,
    call_safely,
    guarded,
    local_user,
    read_safely,
)
from services.runtime.service import tracing

SERVER_INFO = {"name": SERVER_NAME, "version": SERVER_VERSION}  # in every result's _meta
LIST_TTL_MS = 60_000  # tools, prompts and resources change with a release, not a call
TRACE_KEYS = ("traceparent", "tracestate")  # W3C trace context, as a 2026-07-28 _meta holds it
RUN_TOOLS = frozenset({"run", "import_asset"})  # the tools whose runs may wait on a person
log = logging.getLogger("blendmesh.mcp")


@dataclass(frozen=True)
class _Declared:
    capabilities: types.ClientCapabilities


@dataclass(frozen=True)
class _NoBackChannel:
    """The session ``approval.submit`` asks how to reach the person through: on this
    revision the server sends no requests, so the client's elicitation is left out (an
    approval is asked by MRTR after the call instead) and only its extensions stay (an
    Apps client still gets the card)."""

    client_params: _Declared


@dataclass(frozen=True)
class _Request:
    """The one request, as the tools' handlers read a 2025-11-25 request context: no
    progress token, no session to ask through, no HTTP request to name a console by."""

    session: _NoBackChannel
    request_id: Any
    meta: None = None
    request: None = None
    lifespan_context: dict[str, Any] = field(default_factory=dict)


def _context(request_id: Any, capabilities: Mapping[str, Any]) -> Context:
    extensions = capabilities.get("extensions")
    declared = types.ClientCapabilities.model_validate(
        {"extensions": extensions} if isinstance(extensions, dict) else {}
    )
    # The handlers take the SDK's context type; they read only these four fields of it.
    return cast(Context, _Request(_NoBackChannel(_Declared(declared)), request_id))


def _wire(model: pydantic.BaseModel) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _listed(key: str, items: list[Any]) -> dict[str, Any]:
    return {key: [_wire(i) for i in items], "ttlMs": LIST_TTL_MS, "cacheScope": "private"}


def _discover() -> dict[str, Any]:
    return {
        "supportedVersions": list(VERSIONS),
        "capabilities": {
            "tools": {},
            "resources": {},
            "prompts": {},
            "extensions": {tasks.EXTENSION: {}},
        },
        "instructions": INSTRUCTIONS,
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
    }


@dataclass(frozen=True)
class Modern:
    """The 2026-07-28 server of one door; ``user`` is the caller its transport vouched for."""

    door: Door

    async def answer(
        self,
        user: str,
        message: Any,
        headers: Mapping[str, str] | None = None,
        console: str | None = None,
    ) -> dict[str, Any] | None:
        """The JSON-RPC response to ``message``; None for a notification (nothing to say).
        ``headers`` (lower-case names) are an HTTP request's; None on stdio. ``console``:
        the web console's address, where a URL-mode approval sends the person."""
        if not isinstance(message, Mapping) or message.get("jsonrpc") != "2.0":
            return error(None, Refused(INVALID_REQUEST, "send one JSON-RPC 2.0 request"))
        request_id = message.get("id")
        if "id" not in message:
            return None  # this revision defines no notification a server acts on
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return error(
                None, Refused(INVALID_REQUEST, "the request id must be a string or integer")
            )
        try:
            result = await self._answer(user, request_id, message, headers, console)
        except Refused as exc:
            return error(request_id, exc)
        except Exception as exc:  # the server outlives any one request
            log.error("an MCP %s request failed: %s", VERSION, type(exc).__name__, exc_info=True)
            return error(request_id, Refused(INTERNAL_ERROR, "the MCP server failed; see its log"))
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _answer(
        self,
        user: str,
        request_id: Any,
        message: Mapping[str, Any],
        headers: Mapping[str, str] | None,
        console: str | None,
    ) -> dict[str, Any]:
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or not isinstance(params, Mapping):
            raise Refused(INVALID_REQUEST, "a request names its method and has params with _meta")
        if headers is None:  # stdio: the body alone says it
            version = version_of(params, None)
        else:  # HTTP: the headers an intermediary routes by must say the same
            version = version_of(params, headers.get("mcp-protocol-version"))
            check_headers(method, params, headers)
        meta = params.get("_meta") or {}
        capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY) or {}
        # The caller's W3C trace context in _meta: the run's trace continues the caller's.
        carried = {k: v for k in TRACE_KEYS if isinstance(v := meta.get(k), str) and len(v) < 512}
        with tracing.continuing(carried):
            return await self._traced(
                user, request_id, method, params, version, capabilities, console
            )

    async def _traced(
        self,
        user: str,
        request_id: Any,
        method: str,
        params: Mapping[str, Any],
        version: str,
        capabilities: Mapping[str, Any],
        console: str | None,
    ) -> dict[str, Any]:
        if method in tasks.METHODS:  # the extension's, beside the revision's own methods
            return self._stamped(await self._task_method(user, method, params, capabilities))
        try:
            wire.validate_client_request(method, version, params)
        except KeyError:
            raise Refused(METHOD_NOT_FOUND, f"no method {method[:64]!r} in MCP {version}") from None
        except pydantic.ValidationError as exc:
            where = ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise Refused(
                INVALID_PARAMS, f"params of {method} do not match its schema at {where}"
            ) from None
        result = await self._method(user, request_id, method, params, capabilities, console)
        if result.get("resultType") == "task":  # the extension's result, beside the revision's
            return self._stamped(result)
        shaped = wire.serialize_server_result(method, version, {"resultType": "complete", **result})
        return self._stamped(shaped)

    @staticmethod
    def _stamped(result: dict[str, Any]) -> dict[str, Any]:
        """``result`` with the server's name in its ``_meta``, as 2026-07-28 results carry."""
        meta = result.get("_meta") or {}
        return {
            "resultType": "complete",
            **result,
            "_meta": {**meta, SERVER_INFO_META_KEY: SERVER_INFO},
        }

    async def _task_method(
        self, user: str, method: str, params: Mapping[str, Any], capabilities: Mapping[str, Any]
    ) -> dict[str, Any]:
        if not tasks.declared(capabilities):
            raise Refused(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"{method} is the tasks extension's: declare {tasks.EXTENSION} in _meta "
                f"{CLIENT_CAPABILITIES_META_KEY}.extensions",
                tasks.CAPABILITY_ERROR,
            )
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise Refused(
                INVALID_PARAMS, f"{method} takes params.taskId, the id tools/call answered"
            )
        responses = params.get("inputResponses")
        if method == "tasks/update" and not isinstance(responses, Mapping):
            raise Refused(INVALID_PARAMS, "tasks/update takes params.inputResponses, an object")
        try:
            match method:
                case "tasks/get":
                    return await tasks.get(self.door, user, task_id)
                case "tasks/update":
                    await tasks.update(self.door, user, task_id, responses)
                case _:
                    await tasks.cancel(self.door, user, task_id)
        except tasks.UnknownTask as exc:
            raise Refused(INVALID_PARAMS, str(exc)) from None
        except mrtr.BadAnswer as exc:
            raise Refused(INVALID_PARAMS, str(exc)) from None
        return {}

    async def _method(
        self,
        user: str,
        request_id: Any,
        method: str,
        params: Mapping[str, Any],
        capabilities: Mapping[str, Any],
        console: str | None,
    ) -> dict[str, Any]:
        match method:
            case "server/discover":
                return _discover()
            case "tools/list":
                extra = [cards.ANSWER_APPROVAL] if cards.renders_apps(
                    types.ClientCapabilities.model_validate(
                        {"extensions": capabilities.get("extensions") or {}}
                    )
                ) else []  # fmt: skip
                return _listed("tools", [*LISTED, *extra])
            case "tools/call":
                return await self._call(user, request_id, params, capabilities, console)
            case "resources/list":
                return _listed("resources", [*tools.RESOURCES, cards.CARD])
            case "resources/templates/list":
                return _listed("resourceTemplates", tools.TEMPLATES)
            case "resources/read":
                return await self._read(user, request_id, str(params["uri"]))
            case "prompts/list":
                return _listed("prompts", prompts.PROMPTS)
            case "prompts/get":
                try:
                    return _wire(prompts.get(str(params["name"]), params.get("arguments")))
                except ValidationError as exc:
                    raise Refused(INVALID_PARAMS, str(exc)) from None
        raise Refused(METHOD_NOT_FOUND, f"blendmesh does not serve {method} in MCP {VERSION}")

    async def _read(self, user: str, request_id: Any, uri: str) -> dict[str, Any]:
        if uri == cards.CARD_URI:
            page = {"uri": uri, "mimeType": cards.APP_MIME, "text": cards.card_html()}
            return {"contents": [page], "ttlMs": LIST_TTL_MS, "cacheScope": "public"}
        try:
            data = await read_safely(self.door, local_user(user), uri, _context(request_id, {}))
        except McpError as exc:
            # 2026-07-28 names -32602 for a resource that is not there (2025-11-25: -32002).
            raise Refused(INVALID_PARAMS, exc.error.message, exc.error.data) from None
        content = {"uri": uri, "mimeType": "application/json", "text": data.decode()}
        # A scene's inspection changes with each run: fresh only now, and only for its owner.
        return {"contents": [content], "ttlMs": 0, "cacheScope": "private"}

    async def _call(
        self,
        user: str,
        request_id: Any,
        params: Mapping[str, Any],
        capabilities: Mapping[str, Any],
        console: str | None,
    ) -> dict[str, Any]:
        name, arguments = str(params["name"]), params.get("arguments") or {}
        # Input responses without a state answer nothing this server asked: ignored, as
        # the revision says of parameters a server does not expect.
        if params.get("requestState") is not None:
            try:
                sealed, asked_by = mrtr.opened(
                    self.door, user, name, arguments, params.get("requestState"), time.time()
                )
                decision = mrtr.decision_of(params.get("inputResponses"))
            except mrtr.BadAnswer as exc:
                raise Refused(INVALID_PARAMS, str(exc)) from None
            resumed: list[Any] = []

            async def resume() -> types.CallToolResult:
                answer, waiting = await mrtr.resume(self.door, user, sealed, decision, asked_by)
                resumed.append(waiting)
                return answer

            answer = await guarded(name, resume)
            waiting = resumed[0] if resumed else None
        elif name in tasks.RUN_TOOLS and tasks.declared(capabilities):
            started = await guarded(name, lambda: tasks.start(self.door, user, name, arguments))
            return started if isinstance(started, dict) else _wire(started)
        else:
            ctx = _context(request_id, capabilities)
            answer = await call_safely(self.door, local_user(user), name, arguments, ctx)
            waiting = await self._waiting(user, name, answer)
        ask = mrtr.mode_for(capabilities, self._console(console))
        if waiting is not None and ask is not None:
            return mrtr.input_required(
                self.door, user, name, arguments, waiting, ask, self._console(console)
            )
        return _wire(answer)

    def _console(self, console: str | None) -> str | None:
        """The web console's address: the gateway's a request came to, else (stdio)
        BLENDMESH_CONSOLE_URL; None when neither is known."""
        configured = self.door.settings.env.get(CONSOLE_VAR, "").strip().rstrip("/")
        return console or configured or None

    async def _waiting(self, user: str, name: str, answer: types.CallToolResult) -> Any:
        """The approval a run tool's answer waits on, unless its card was sealed for it."""
        data = answer.structuredContent or {}
        if name not in RUN_TOOLS or data.get("status") != "awaiting_confirmation":
            return None
        if cards.SEAL_KEY in (answer.meta or {}):
            return None  # the person answers in the card
        view = await self.door.client.view(str(data["run_id"]))
        return view.pending if view is not None else None
