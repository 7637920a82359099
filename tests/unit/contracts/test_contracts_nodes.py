"""The node catalog contract: what the bridge encodes is what a planner decodes."""

from __future__ import annotations

import json

import msgspec
import pytest

from contracts import nodes
from contracts.nodes import NodeCatalog, NodeSpec, PropertySpec, SocketSpec, find_socket

MATH = NodeSpec(
    bl_idname="ShaderNodeMath",
    label="Math",
    inputs=[
        SocketSpec(name="Value", identifier="Value", bl_idname="NodeSocketFloat", type="VALUE",
                   min=-3.4e38, max=3.4e38, default=0.5),
        SocketSpec(name="Value", identifier="Value_001", bl_idname="NodeSocketFloat",
                   type="VALUE", default=0.5),
        SocketSpec(name="Value", identifier="Value_002", bl_idname="NodeSocketFloat",
                   type="VALUE", enabled=False, default=0.5),
    ],
    outputs=[
        SocketSpec(name="Value", identifier="Value", bl_idname="NodeSocketFloat", type="VALUE")
    ],
    properties=[
        PropertySpec(identifier="operation", type="ENUM", enum_items=["ADD", "MULTIPLY"],
                     default="ADD"),
        PropertySpec(identifier="use_clamp", type="BOOLEAN", default=False),
    ],
)  # fmt: skip
CATALOG = NodeCatalog(blender_version="5.0.1", nodes={"ShaderNodeMath": MATH})


def test_catalog_when_encoded_and_decoded_is_equal() -> None:
    assert nodes.decode(nodes.encode(CATALOG)) == CATALOG


def test_catalog_when_encoded_leaves_defaults_out_and_sorts_keys() -> None:
    data = json.loads(nodes.encode(CATALOG))
    output = data["nodes"]["ShaderNodeMath"]["outputs"][0]
    assert output == {
        "bl_idname": "NodeSocketFloat",
        "identifier": "Value",
        "name": "Value",
        "type": "VALUE",
    }
    assert list(data) == sorted(data)
    assert nodes.encode(CATALOG) == nodes.encode(nodes.decode(nodes.encode(CATALOG)))


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        (b'{"blender_version": "5.0.1", "nodes": {}, "extra": 1}', "unknown field `extra`"),
        (b'{"nodes": {}}', "missing required field `blender_version`"),
        (
            b'{"blender_version": "5.0.1", "nodes": {"X": {"bl_idname": "X"}}}',
            "missing required field `label` - at `$.nodes[...]`",
        ),
        (
            b'{"blender_version": "5.0.1", "nodes": {"X": {"bl_idname": "X", "label": "X", '
            b'"inputs": [{"name": "A", "identifier": "A", "bl_idname": "S", "type": "VALUE", '
            b'"colour": 1}]}}}',
            "unknown field `colour` - at `$.nodes[...].inputs[0]`",
        ),
        (b"[]", "Expected `object`, got `array`"),
    ],
)
def test_catalog_when_decoding_unknown_or_missing_fields_refuses(broken: bytes, said: str) -> None:
    with pytest.raises(msgspec.ValidationError) as refused:
        nodes.decode(broken)
    assert said in str(refused.value)


def test_find_socket_when_name_repeats_prefers_enabled_name_then_identifier() -> None:
    first = MATH.find_input("Value")
    assert first is not None and first.identifier == "Value"
    third = MATH.find_input("Value_002")
    assert third is not None and not third.enabled
    assert MATH.find_input("Nope") is None
    output = MATH.find_output("Value")
    assert output is not None and output.identifier == "Value"


def test_find_socket_when_only_a_disabled_socket_has_the_name_finds_it() -> None:
    sockets = [
        SocketSpec(name="A", identifier="A_Float", bl_idname="NodeSocketFloat", type="VALUE",
                   enabled=False),
        SocketSpec(name="A", identifier="A_Color", bl_idname="NodeSocketColor", type="RGBA"),
        SocketSpec(name="B", identifier="B_Float", bl_idname="NodeSocketFloat", type="VALUE",
                   enabled=False),
    ]  # fmt: skip
    found = find_socket(sockets, "A")
    assert found is not None and found.identifier == "A_Color"
    disabled = find_socket(sockets, "B")
    assert disabled is not None and disabled.identifier == "B_Float"


def test_find_property_when_known_returns_it_with_items() -> None:
    found = MATH.find_property("operation")
    assert found is not None and found.enum_items == ["ADD", "MULTIPLY"]
    assert MATH.find_property("data_type") is None


def test_catalog_when_frozen_refuses_changes() -> None:
    with pytest.raises(AttributeError, match="immutable type: 'NodeCatalog'"):
        CATALOG.blender_version = "4.2.0"  # type: ignore[misc]
    assert CATALOG.blender_version != "4.2.0"
