"""Tools registered through the bridge's real registry API, for unit tests of the spec 001
branches no production tool takes today (ui_assisted, unsafe_ops, seeded, nondeterministic).

The registry module imports no bpy, so these run in the test process; ``RegistryBridge``
serves them through ``registry.call`` (the code the bridge runs for every tool) and
everything else through the in-memory bridge.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec

from contracts.bridge import ToolResult
from contracts.tools import ToolCatalog, catalog_from_mcp
from services.bridge import registry
from services.bridge.registry import SEED, SEED_SCHEMA, Outcome, Touches
from tests.support.catalog_fixture import CATALOG
from tests.support.fake_bridge import FakeBridge

BLENDER = (5, 0, 1)
_NAMED = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 63}},
}


def _panel(args: dict[str, Any]) -> Outcome:
    return Outcome({"panel": args["name"]}, mutated=False)


def _unsafe(args: dict[str, Any]) -> Outcome:
    return Outcome({"name": args["name"]}, mutated=True)


def _noise(args: dict[str, Any]) -> Outcome:
    # Unseeded on purpose: what a nondeterministic tool is.
    return Outcome({"name": args["name"], "jitter": random.random()}, mutated=True)


def _scatter(args: dict[str, Any]) -> Outcome:
    points = random.Random(args[SEED]).sample(range(1000), 3)
    return Outcome({"name": args["name"], "points": points}, mutated=True)


def _broken(args: dict[str, Any]) -> Outcome:
    raise RuntimeError("the tool has a bug")


SPECS: dict[str, dict[str, Any]] = {
    "test.ui_panel": {
        "fn": _panel,
        "safety_level": "read_only",
        "safety_mode": "ui_assisted",
        "input_schema": _NAMED,
    },
    "test.unsafe_op": {
        "fn": _unsafe,
        "safety_level": "safe_write",
        "safety_mode": "unsafe_ops",
        "input_schema": _NAMED,
    },
    "test.noise": {
        "fn": _noise,
        "safety_level": "safe_write",
        "determinism_class": "nondeterministic",
        "input_schema": _NAMED,
    },
    "test.scatter": {
        "fn": _scatter,
        "safety_level": "safe_write",
        "determinism_class": "seeded",
        "input_schema": {**_NAMED, "properties": {**_NAMED["properties"], SEED: SEED_SCHEMA}},
    },
    "test.broken": {
        "fn": _broken,
        "safety_level": "safe_write",
        "determinism_class": "seeded",
        "input_schema": {**_NAMED, "properties": {**_NAMED["properties"], SEED: SEED_SCHEMA}},
    },
}


@contextmanager
def registered() -> Iterator[ToolCatalog]:
    """Register the test tools for the duration, and yield the catalog the executor would
    read from them (MCP ``tools/list`` entries through ``catalog_from_mcp``) joined to the
    unit tests' catalog."""
    for name, spec in SPECS.items():
        fields = {k: v for k, v in spec.items() if k != "fn"}
        registry.tool(
            name=name,
            description=name,
            idempotence_class="non_idempotent",
            compensation="checkpoint",
            touches=None if fields["safety_level"] == "read_only" else Touches(names=("name",)),
            **fields,
        )(spec["fn"])
    try:
        entries = [registry.REGISTRY[name].spec.to_mcp() for name in SPECS]
        ours = catalog_from_mcp(entries, "5.0.1")
        yield msgspec.structs.replace(ours, tools=[*CATALOG.tools, *ours.tools])
    finally:
        for name in SPECS:
            registry.REGISTRY.pop(name, None)


class RegistryBridge(FakeBridge):
    """The in-memory bridge, with the test tools served by the real registry."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        if name not in SPECS:
            return await super().call_tool(name, arguments, mcp_call_id, timeout)
        self.calls.append(mcp_call_id)
        result = registry.call(name, arguments, BLENDER)
        if result.ok and result.mutated:
            self.scene[f"{name}:{arguments['name']}"] = {"location": [0, 0, 0], "mods": {}}
        return result
