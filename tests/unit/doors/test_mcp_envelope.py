"""A 2026-07-28 request's envelope (services/doors/mcp/envelope.py): the version it
names, the routing headers that must say what its body says, the HTTP status of each
error."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from services.doors.mcp.envelope import Refused, check_headers, error, http_status, version_of

META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


def refused(call: Any, *args: Any) -> Refused:
    with pytest.raises(Refused) as caught:
        call(*args)
    return caught.value


def test_version_when_named_alike_in_body_and_header_is_it() -> None:
    assert version_of(META, "2026-07-28") == "2026-07-28"
    assert version_of(META, None) == "2026-07-28"  # stdio: the body alone


@pytest.mark.parametrize(
    ("params", "header", "code"),
    [
        ({}, "2026-07-28", -32602),  # no _meta: no version named at all
        ({"_meta": "x"}, None, -32602),
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": 2026}}, None, -32602),
        (META, "2025-11-25", -32020),  # the header says another
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": "v9"}}, "v9", -32022),
    ],
)
def test_version_when_missing_contradicted_or_unknown_is_refused(
    params: dict[str, Any], header: str | None, code: int
) -> None:
    assert refused(version_of, params, header).code == code


def test_unknown_version_names_the_versions_served_and_echoes_the_asked() -> None:
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": "v9" * 100}}
    data = refused(version_of, params, None).data
    assert data["supported"] == ["2026-07-28"] and data["requested"] == ("v9" * 100)[:64]


def test_headers_when_they_say_what_the_body_says_pass() -> None:
    check_headers("tools/list", {}, {"mcp-method": "tools/list"})
    check_headers("tools/call", {"name": "run"}, {"mcp-method": "tools/call", "mcp-name": "run"})
    encoded = base64.b64encode("ränder".encode()).decode()
    check_headers(
        "prompts/get",
        {"name": "ränder"},
        {"mcp-method": "prompts/get", "mcp-name": f"=?base64?{encoded}?="},
    )
    uri = "blendmesh://catalog"
    check_headers("resources/read", {"uri": uri}, {"mcp-method": "resources/read", "mcp-name": uri})


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("tools/list", {}, {}),  # no Mcp-Method
        ("tools/list", {}, {"mcp-method": "prompts/list"}),
        ("tools/call", {"name": "run"}, {"mcp-method": "tools/call"}),  # no Mcp-Name
        ("tools/call", {"name": "run"}, {"mcp-method": "tools/call", "mcp-name": "runs"}),
        ("tools/call", {"name": "run"}, {"mcp-method": "tools/call", "mcp-name": "=?base64?%%?="}),
        ("resources/read", {"uri": "a"}, {"mcp-method": "resources/read", "mcp-name": "b"}),
    ],
)
def test_headers_when_missing_or_lying_are_refused(
    method: str, params: dict[str, Any], headers: dict[str, str]
) -> None:
    assert refused(check_headers, method, params, headers).code == -32020


@pytest.mark.parametrize(
    ("code", "status"), [(-32700, 400), (-32602, 400), (-32020, 400), (-32601, 404), (-32603, 200)]
)
def test_each_error_has_the_revisions_http_status(code: int, status: int) -> None:
    assert http_status(error(1, Refused(code, "x"))) == status


def test_a_notification_is_accepted_and_a_result_is_ok() -> None:
    assert http_status(None) == 202
    assert http_status({"jsonrpc": "2.0", "id": 1, "result": {}}) == 200
