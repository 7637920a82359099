"""An MCP client session that holds every tool answer to the tool's declared
``outputSchema``, error answers too (the SDK checks only the others, and MCP clients such
as the TypeScript SDK check both)."""

from __future__ import annotations

from typing import Any

import jsonschema
import mcp.types as types
from mcp import ClientSession


class CheckedSession(ClientSession):
    _declared: dict[str, dict[str, Any] | None]

    async def call_tool(self, name: str, *args: Any, **kwargs: Any) -> types.CallToolResult:
        answer = await super().call_tool(name, *args, **kwargs)
        if not hasattr(self, "_declared"):
            self._declared = {t.name: t.outputSchema for t in (await self.list_tools()).tools}
        if name not in self._declared:  # a tool the server does not have
            assert answer.isError, f"unknown tool {name} answered as if it existed"
            return answer
        schema = self._declared[name]
        assert schema is not None, f"tool {name} declares no outputSchema"
        assert answer.structuredContent is not None, f"tool {name} answered no structure"
        jsonschema.Draft202012Validator(schema).validate(answer.structuredContent)
        return answer


class HostSession(CheckedSession):
    """A checked session that declares exactly ``capabilities`` when it initializes, as
    a given host does (the SDK's own client declares what its callbacks imply)."""

    def __init__(self, *args: Any, capabilities: types.ClientCapabilities, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._host_capabilities = capabilities

    async def initialize(self) -> types.InitializeResult:
        params = types.InitializeRequestParams(
            protocolVersion=types.LATEST_PROTOCOL_VERSION,
            capabilities=self._host_capabilities,
            clientInfo=types.Implementation(name="a-host", version="1"),
        )
        result = await self.send_request(
            types.ClientRequest(types.InitializeRequest(params=params)), types.InitializeResult
        )
        self._server_capabilities = result.capabilities
        await self.send_notification(types.ClientNotification(types.InitializedNotification()))
        return result


APPS = types.ClientCapabilities(
    extensions={"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
)  # type: ignore[call-arg]  # SEP-2133 extensions: an extra field of the 2025-11-25 model
URL_ONLY = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability())
)
