"""The 2026-07-28 envelope of one request: the version it names, the routing headers an
intermediary reads, and the JSON-RPC errors (with their HTTP statuses) a request that
gets them wrong is answered with. Pure: no mesh, no SDK server."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from mcp_types import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PROTOCOL_VERSION_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)

from contracts.errors import BlendmeshError

VERSION = "2026-07-28"
VERSIONS = (VERSION,)
NAMED_METHODS = frozenset({"tools/call", "resources/read", "prompts/get"})
BASE64_HEADER = re.compile(r"=\?base64\?([A-Za-z0-9+/=]*)\?=")


class Refused(BlendmeshError):
    """A JSON-RPC error answer: the code the revision names and a message saying what
    was wrong and what to send instead."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def version_of(params: Mapping[str, Any], header: str | None) -> str:
    meta = params.get("_meta")
    said = meta.get(PROTOCOL_VERSION_META_KEY) if isinstance(meta, Mapping) else None
    if not isinstance(said, str):
        raise Refused(
            INVALID_PARAMS,
            f"params._meta must name the protocol version in {PROTOCOL_VERSION_META_KEY} "
            "(with the client's capabilities and name): this revision has no initialize",
        )
    if header is not None and said != header:
        raise Refused(
            HEADER_MISMATCH,
            f"MCP-Protocol-Version is {header[:32]!r} but _meta "
            f"{PROTOCOL_VERSION_META_KEY} is {said[:32]!r}; send the same version in both",
        )
    if said not in VERSIONS:
        raise Refused(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(VERSIONS), "requested": said[:64]},
        )
    return said


def _header_value(value: str) -> str:
    """A routing header's value, decoded when it is in the revision's base64 form."""
    match = BASE64_HEADER.fullmatch(value)
    if match is None:
        return value
    try:
        return base64.b64decode(match.group(1), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return value  # not decodable: it cannot match, and the mismatch says so


def check_headers(method: str, params: Mapping[str, Any], headers: Mapping[str, str]) -> None:
    """The routing headers (Mcp-Method, Mcp-Name) say what the body says, or -32020: an
    intermediary routes by them, so a request whose headers lie is refused."""
    said = headers.get("mcp-method")
    if said != method:
        raise Refused(
            HEADER_MISMATCH,
            f"Mcp-Method is {str(said)[:64]!r} but the body's method is {method[:64]!r}; "
            "send the body's method in it",
        )
    if method not in NAMED_METHODS:
        return
    field = "uri" if method == "resources/read" else "name"
    named = headers.get("mcp-name")
    if named is None or _header_value(named) != params.get(field):
        raise Refused(
            HEADER_MISMATCH,
            f"Mcp-Name must be the body's params.{field} (as =?base64?...?= when it is not "
            "plain ASCII)",
        )


def error(request_id: Any, exc: Refused) -> dict[str, Any]:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


HTTP_STATUS = {  # the revision's HTTP status for a JSON-RPC error code
    -32700: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def http_status(response: Mapping[str, Any] | None) -> int:
    """The HTTP status of ``response`` on streamable HTTP (202: a notification's)."""
    if response is None:
        return 202
    error = response.get("error")
    return HTTP_STATUS.get(error["code"], 200) if isinstance(error, Mapping) else 200
