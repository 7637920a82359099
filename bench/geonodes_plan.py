"""The Geometry Nodes benchmark workload: a 25-op NODE_TREE response (spec 004 §3).

Eight Transform Geometry nodes in a chain between the group's input and output: 8 creates,
8 input defaults and 9 links. Shared by the mesh side and the bpy baseline.
"""

from __future__ import annotations

import itertools
from typing import Any

NODES = [f"t{i}" for i in range(8)]
CHAIN = ["group_input", *NODES, "group_output"]
LINKS = list(itertools.pairwise(CHAIN))


def translation(index: int) -> list[float]:
    return [0.0, 0.0, 0.1 * (index + 1)]


def response(step: str = "step_1") -> dict[str, Any]:
    """The 004 response: 25 operations on the plane's Geometry Nodes modifier."""
    ops: list[dict[str, Any]] = [
        {
            "op": "create_node",
            "node_id": node_id,
            "bl_idname": "GeometryNodeTransform",
            "location": [200 * i, 0],
        }
        for i, node_id in enumerate(NODES)
    ]
    ops += [
        {"op": "set_input_default", "node_id": node_id, "socket": "Translation",
         "value": translation(i)}
        for i, node_id in enumerate(NODES)
    ]  # fmt: skip
    ops += [
        {
            "op": "link",
            "from": {"node_id": source, "socket": "Geometry"},
            "to": {"node_id": target, "socket": "Geometry"},
        }
        for source, target in LINKS
    ]
    assert len(ops) == 25
    return {
        "version": "1.0",
        "steps": [
            {
                "id": step,
                "type": "NODE_TREE",
                "description": "a chain of eight transforms",
                "payload": {
                    "target": {
                        "object_name": "Plane",
                        "modifier_name": "GeometryNodes",
                        "node_group_name": "GN_Bench",
                    },
                    "operations": ops,
                },
            }
        ],
        "done": True,
        "final_message": "built the chain",
        "meta": {"requires_gate_verification": True},
    }
