"""A tool catalog with the ``gn.*`` tools and a node catalog read from Blender 5.0.1, for
unit tests of Geometry Nodes plans (spec 004)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from contracts import nodes
from contracts.nodes import NodeCatalog
from contracts.tools import ToolCatalog, ToolSpec
from tests.support.catalog_fixture import CATALOG

GN_TOOLS = (
    "gn.ensure_target",
    "gn.ensure_group_io",
    "gn.add_node",
    "gn.remove_node",
    "gn.set_input",
    "gn.set_property",
    "gn.link",
    "gn.unlink",
    "gn.set_group_io",
    "gn.cleanup_unused",
)
GN_CATALOG = ToolCatalog(
    version="test-gn",
    blender_version="5.0.1",
    tools=[
        *CATALOG.tools,
        *(
            ToolSpec(name=n, description=n, safety_level="safe_write", input_schema={})
            for n in GN_TOOLS
        ),
        ToolSpec(name="python.safe", description="", safety_level="safe_write", input_schema={}),
        ToolSpec(
            name="python.trusted", description="", safety_level="destructive", input_schema={}
        ),
    ],
)
# A part of the catalog the bridge reads from Blender: the nodes the tests build with.
NODES: NodeCatalog = nodes.decode(
    (Path(__file__).parents[1] / "fixtures" / "node_catalog_subset.json").read_bytes()
)

EXAMPLE_9: dict[str, Any] = {
    "version": "1.0",
    "steps": [
        {
            "id": "step_1",
            "type": "NODE_TREE",
            "description": "Create a simple scatter setup",
            "payload": {
                "target": {
                    "object_name": "Plane",
                    "modifier_name": "GeometryNodes",
                    "node_group_name": "GN_Scatter",
                },
                "operations": [],
            },
        },
        {
            "id": "step_2",
            "type": "GN_OPS",
            "description": "Apply deterministic graph cleanup and final link checks",
            "payload": {
                "v": 1,
                "target": {"object_name": "Plane", "modifier_name": "GeometryNodes"},
                "ops": [{"op": "cleanup_unused"}],
            },
        },
        {
            "id": "step_3",
            "type": "PYTHON",
            "description": "Frame viewport on target object",
            "payload": {
                "mode": "safe",
                "timeout_ms": 3000,
                "code": "import bpy\nobj=bpy.data.objects.get('Plane')\n"
                "print(obj.name if obj else 'missing')",
            },
        },
    ],
    "done": True,
    "final_message": "Created scatter graph scaffold, normalized links, and ran scene helper "
    "script.",
    "meta": {"requires_gate_verification": True},
}


def subdivide(object_name: str = "Cube", level: Any = 2) -> dict[str, Any]:
    """§3's example, whole: subdivide the object's mesh through a node group."""
    return {
        "version": "1.0",
        "steps": [
            {
                "id": "step_1",
                "type": "NODE_TREE",
                "description": "Subdivide",
                "payload": {
                    "target": {
                        "object_name": object_name,
                        "modifier_name": "GeometryNodes",
                        "node_group_name": "GN_Assistant_Group",
                    },
                    "operations": [
                        {
                            "op": "create_node",
                            "node_id": "n1",
                            "bl_idname": "GeometryNodeSubdivisionSurface",
                            "location": [100, 200],
                        },
                        {
                            "op": "set_input_default",
                            "node_id": "n1",
                            "socket": "Level",
                            "value": level,
                        },
                        {
                            "op": "link",
                            "from": {"node_id": "group_input", "socket": "Geometry"},
                            "to": {"node_id": "n1", "socket": "Mesh"},
                        },
                        {
                            "op": "link",
                            "from": {"node_id": "n1", "socket": "Mesh"},
                            "to": {"node_id": "group_output", "socket": "Geometry"},
                        },
                    ],
                },
            }
        ],
        "done": True,
        "final_message": "Subdivided.",
    }


def with_ops(response: dict[str, Any], *ops: dict[str, Any], step: int = 0) -> dict[str, Any]:
    """A copy of ``response`` with ``ops`` appended to a NODE_TREE step's operations."""
    doc = copy.deepcopy(response)
    doc["steps"][step]["payload"]["operations"].extend(ops)
    return doc
