"""Every tool the bridge registers, fed what a hostile caller tries first: unknown and
wrongly typed arguments, nesting, huge numbers, and names of objects that are not there.
Each is refused with ``invalid_input`` or ``not_found`` and the scene does not change."""

from __future__ import annotations

from typing import Any

import pytest

from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

shared_bridge, bridge = bridge_fixtures()
REFUSED = {"invalid_input", "not_found", "conflict"}


async def tools(bridge: BridgeProcess) -> list[dict[str, Any]]:
    return [t for t in await bridge.list_tools() if t["name"] != "scene.snapshot"]


async def refused(bridge: BridgeProcess, tool: str, arguments: dict[str, Any]) -> str:
    before = await bridge.fingerprint()
    result = await call(bridge, tool, **arguments)
    assert not result.ok, (tool, arguments, result)
    assert result.error_code in REFUSED, (tool, arguments, result)
    assert not result.mutated and await bridge.fingerprint() == before, (tool, arguments)
    return result.message


def _hostile_value(schema: dict[str, Any]) -> Any:
    """A value of the wrong kind for ``schema``, or one far past any bound."""
    kind = schema.get("type")
    if kind in ("number", "integer"):
        return 1e300
    if kind == "array":
        return [[[[1]]]] * 3
    return {"nested": {"deeper": [1e300]}}


async def test_every_tool_when_given_an_unknown_argument_refuses_naming_it(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    for spec in await tools(bridge):
        message = await refused(bridge, spec["name"], {"sudo": True})
        assert "sudo" in message or "required" in message, (spec["name"], message)


async def test_every_argument_when_wrongly_typed_or_huge_is_refused(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    checked = 0
    for spec in await tools(bridge):
        properties = spec["inputSchema"].get("properties", {})
        for name, schema in properties.items():
            await refused(bridge, spec["name"], {name: _hostile_value(schema)})
            checked += 1
    assert checked > 60  # every argument of every tool, not a handful


async def test_every_tool_naming_an_object_when_it_is_not_there_refuses(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    names = ("object", "child", "name", "parent")  # "object" first: "name" may be a modifier's
    seen = 0
    for spec in await tools(bridge):
        schema = spec["inputSchema"]
        required = set(schema.get("required", []))
        key = next((n for n in names if n in required), None)
        if key is None or spec["name"].endswith(".create"):
            continue
        arguments = {n: "Box" for n in required if n in names}
        arguments[key] = "NoSuchObject"
        for other in required - set(arguments):
            arguments[other] = _minimal(schema["properties"][other])
        message = await refused(bridge, spec["name"], arguments)
        assert "NoSuchObject" in message, (spec["name"], message)
        seen += 1
    assert seen >= 10


def _minimal(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        return schema.get("minimum", 0)
    if kind == "array":
        if schema.get("items", {}).get("type") == "string":  # names, e.g. mesh.join's
            return [_minimal(schema["items"])] * schema.get("minItems", 0)
        return [0.0] * schema.get("minItems", 0)
    if kind == "object":
        return {"levels": 1}  # modifier.set needs one property; others take any object
    return "x"
