"""Geometry Nodes clause forms of the rules grammar: each one is a spec 004 NODE_TREE step.

A form returns ``(NODE_TREE, payload)``: ``plan_request`` turns the payload into a
NODE_TREE step and compiles it into ``gn.*`` operations (docs/grammar.md, "Geometry
Nodes"). The node trees are fixed; only counts, names and spacing come from the text.
"""

from __future__ import annotations

from typing import Any

from contracts.geonodes import GROUP_INPUT, GROUP_OUTPUT
from services.planner.rules.cursor import Cursor, NoParse, Plan
from services.planner.rules.sizes import singular
from services.planner.rules.words import NUMBER_WORDS

NODE_TREE = "NODE_TREE"  # the pseudo tool name of a clause that is a whole step
MAX_COUNT = 10_000  # instances one clause may ask for
AXES = ("x", "y", "z")


VAGUE = frozenset({"some", "few", "lots", "many", "several", "a"})


def _instance(cur: Cursor) -> str:
    """The object scattered: its name, or a plural noun its one object is numbered from
    ("rocks" is Rock); a noun no object has is refused saying the object must exist."""
    token = cur.peek()
    if token is not None and token.kind == "WORD" and cur.stage.known:
        word = token.lower
        if not cur.stage.exists(cur.stage.spelled(token.text)):
            stem = singular(word) or word
            found = cur.stage.named_like(stem)
            if len(found) == 1:
                cur.pos += 1
                return found[0]
            raise NoParse(
                f'Scatter copies an object the scene has, and none is called "{token.text}": '
                f"add one first (add a {stem}), then scatter 50 {stem.capitalize()} on <Surface>."
            )
    return cur.name()


def _count(cur: Cursor) -> int:
    token = cur.peek()
    if token is not None and token.lower in NUMBER_WORDS:
        cur.pos += 1
        return NUMBER_WORDS[token.lower]
    value = cur.number()
    if not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise NoParse(f"The count must be a whole number from 1 to {MAX_COUNT}.")
    return value


def _node(node_id: str, bl_idname: str, x: int, y: int = 0) -> dict[str, Any]:
    return {"op": "create_node", "node_id": node_id, "bl_idname": bl_idname, "location": [x, y]}


def _set(node_id: str, socket: str, value: Any) -> dict[str, Any]:
    return {"op": "set_input_default", "node_id": node_id, "socket": socket, "value": value}


def _prop(node_id: str, prop: str, value: Any) -> dict[str, Any]:
    return {"op": "set_property", "node_id": node_id, "property": prop, "value": value}


def _link(a: str, out: str, b: str, into: str) -> dict[str, Any]:
    return {
        "op": "link",
        "from": {"node_id": a, "socket": out},
        "to": {"node_id": b, "socket": into},
    }


def _target(obj: str, modifier: str, group: str) -> dict[str, str]:
    return {"object_name": obj, "modifier_name": modifier[:63], "node_group_name": group[:63]}


def scatter(cur: Cursor) -> Plan:
    """scatter <n> [copies of] <Name> on|over|across <Surface>

    About ``n`` instances of the object on the surface's faces, aligned to them: the
    density is ``n`` over the surface's total face area, so the count is random around
    ``n`` (with a fixed seed: the same mesh always gets the same points).
    """
    if (token := cur.peek()) is not None and token.lower in VAGUE:
        raise NoParse(f'Say how many: scatter 50 Rock on Ground (not "{token.text}").')
    count = _count(cur)
    if cur.word("copies", "instances"):
        cur.expect("of")
    instance = _instance(cur)
    cur.expect("on", "over", "across", "onto")
    surface = cur.name()
    cur.end()
    operations = [
        _node("face_area", "GeometryNodeInputMeshFaceArea", -400, -200),
        _node("area", "GeometryNodeAttributeStatistic", -200, -200),
        _prop("area", "domain", "FACE"),
        _link(GROUP_INPUT, "Geometry", "area", "Geometry"),
        _link("face_area", "Area", "area", "Attribute"),
        _node("density", "ShaderNodeMath", 0, -200),
        _prop("density", "operation", "DIVIDE"),
        _set("density", "Value", float(count)),
        _link("area", "Sum", "density", "Value_001"),
        _node("distribute", "GeometryNodeDistributePointsOnFaces", 200, 0),
        _link(GROUP_INPUT, "Geometry", "distribute", "Mesh"),
        _link("density", "Value", "distribute", "Density"),
        _node("source", "GeometryNodeObjectInfo", 200, -300),
        _set("source", "Object", instance),
        _set("source", "As Instance", True),
        _node("instances", "GeometryNodeInstanceOnPoints", 400, 0),
        _link("distribute", "Points", "instances", "Points"),
        _link("distribute", "Rotation", "instances", "Rotation"),
        _link("source", "Geometry", "instances", "Instance"),
        _node("join", "GeometryNodeJoinGeometry", 600, 0),
        _link(GROUP_INPUT, "Geometry", "join", "Geometry"),
        _link("instances", "Instances", "join", "Geometry"),
        _link("join", "Geometry", GROUP_OUTPUT, "Geometry"),
    ]
    target = _target(surface, f"Scatter {instance}", f"Scatter {instance} on {surface}")
    return NODE_TREE, {"target": target, "operations": operations}


def array_of(cur: Cursor) -> Plan:
    """[an] array of <n> [copies of] <Name> along [the] x|y|z [axis] [spaced|every <d>]

    ``n`` copies of the object's own geometry in a row, ``d`` apart (default 2, the size
    of a default cube), starting where the object is.
    """
    cur.skip_article()
    cur.expect("array")
    cur.expect("of")
    count = _count(cur)
    if cur.word("copies", "instances"):
        cur.expect("of")
    obj = cur.name()
    cur.expect("along")
    cur.skip_article()
    axis = cur.expect(*AXES)
    cur.word("axis")
    spacing: float | int = 2.0
    if cur.word("spaced", "every"):
        cur.word("by")
        spacing = cur.number()
    cur.end()
    offset = [float(spacing) if a == axis else 0.0 for a in AXES]
    operations = [
        _node("line", "GeometryNodeMeshLine", -200, 0),
        _set("line", "Count", count),
        _set("line", "Offset", offset),
        _node("instances", "GeometryNodeInstanceOnPoints", 0, 0),
        _link("line", "Mesh", "instances", "Points"),
        _link(GROUP_INPUT, "Geometry", "instances", "Instance"),
        _link("instances", "Instances", GROUP_OUTPUT, "Geometry"),
    ]
    target = _target(obj, f"Array along {axis}", f"Array of {obj} along {axis}")
    return NODE_TREE, {"target": target, "operations": operations}


def tree_objects(payload: dict[str, Any]) -> list[str]:
    """The objects a clause's tree touches: those it reads, then the one it is on (last,
    so "it" in the next clause means that one)."""
    read = [
        op["value"]
        for op in payload["operations"]
        if op["op"] == "set_input_default" and op["socket"] == "Object"
    ]
    return [*read, payload["target"]["object_name"]]
