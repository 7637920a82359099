"""The rules grammar's forms for the modelling, UV and shading tools (docs/grammar.md):
unwrap, extrude, inset, merge by distance, recalculate normals, auto smooth, join, separate, apply
transforms, cut one object out of another, and a brushed-metal shader."""

from __future__ import annotations

from typing import Any

from services.planner.rules.cursor import Cursor, NoParse, Plan
from services.planner.rules.readers import targets
from services.planner.rules.shaders import brushed_metal

# which faces "the top of Box" names, as mesh.extrude's and mesh.inset's rule
_SIDES: dict[str, dict[str, Any]] = {
    "top": {"rule": "facing", "axis": "+Z"},
    "bottom": {"rule": "facing", "axis": "-Z"},
    "front": {"rule": "facing", "axis": "-Y"},
    "back": {"rule": "facing", "axis": "+Y"},
    "faces": {"rule": "all", "individual": True},  # every face along its own normal
}
_TRANSFORMS = ("location", "rotation", "scale")


def unwrap(cur: Cursor) -> list[Plan]:
    """unwrap [the uvs of] <objects>"""
    cur.skip_the()
    if cur.word("uvs", "uv"):
        cur.expect("of")
    names = targets(cur)
    cur.end()
    return [("uv.smart_project", {"object": n}) for n in names]


def _faces_of(cur: Cursor) -> tuple[str, dict[str, Any]]:
    """[the top|bottom|front|back|faces of] <object>: the object and its faces' rule."""
    start = cur.pos
    cur.skip_the()
    side = cur.word(*_SIDES)
    if side is None or not cur.word("of"):
        cur.pos, side = start, "faces"
    return cur.name(), _SIDES[side]


def extrude(cur: Cursor) -> Plan:
    """extrude [the top|bottom|front|back|faces of] <object> by <length>"""
    obj, rule = _faces_of(cur)
    cur.word("by")
    distance = cur.length()
    cur.end()
    return "mesh.extrude", {"object": obj, "distance": distance, **rule}


def inset(cur: Cursor) -> Plan:
    """inset [the top|... of] <object> by <length>"""
    obj, rule = _faces_of(cur)
    cur.word("by")
    thickness = cur.length()
    cur.end()
    return "mesh.inset", {"object": obj, "thickness": thickness, **rule}


def merge(cur: Cursor) -> list[Plan]:
    """merge [the vertices of] <objects> [by distance] [within <length>]"""
    cur.skip_the()
    if cur.word("vertices", "verts"):
        cur.expect("of")
    names = targets(cur)
    if cur.word("by"):
        cur.expect("distance")
    args = {}
    if cur.word("within", "closer"):
        cur.word("than")
        args["distance"] = cur.length()
    cur.end()
    return [("mesh.merge_by_distance", {"object": n, **args}) for n in names]


def recalculate(cur: Cursor) -> list[Plan]:
    """recalculate|fix the normals of <objects>"""
    cur.skip_the()
    cur.expect("normals")
    cur.expect("of", "on")
    names = targets(cur)
    cur.end()
    return [("mesh.recalculate_normals", {"object": n}) for n in names]


def shade_auto(cur: Cursor) -> list[Plan]:
    """shade <objects> auto smooth [at <n> degrees]"""
    names = targets(cur)
    cur.expect("auto")
    cur.expect("smooth")
    args = {}
    if cur.word("at", "by"):
        args["angle"] = cur.number()
        cur.word("degrees", "degree", "deg")
    cur.end()
    return [("mesh.shade_auto_smooth", {"object": n, **args}) for n in names]


def join(cur: Cursor) -> Plan:
    """join <objects> [into <object>]: into the first named, or the one after "into"."""
    names = targets(cur)
    into = cur.name() if cur.word("into", "with", "to") else None
    cur.end()
    if into is None:
        if len(names) < 2:
            raise NoParse("Name two objects or more to join: join Seat and Legs.")
        into, names = names[0], names[1:]
    others = [n for n in names if n != into]
    if not others:
        raise NoParse(f"Name objects to join into {into}.")
    return "mesh.join", {"object": into, "objects": others}


def separate(cur: Cursor) -> Plan:
    """separate <object> by loose parts|material[s]"""
    obj = cur.name()
    cur.expect("by", "into")
    if cur.word("material", "materials"):
        by = "material"
    else:
        cur.word("its")
        cur.expect("loose")
        cur.expect("parts", "part")
        by = "loose_parts"
    cur.end()
    return "mesh.separate", {"object": obj, "by": by}


def apply_transform(cur: Cursor) -> list[Plan]:
    """apply [the] scale|rotation|location [and ...] of|to <objects>"""
    cur.skip_the()
    applied = {cur.expect(*_TRANSFORMS)}
    while cur.word("and", ","):
        cur.skip_the()
        applied.add(cur.expect(*_TRANSFORMS))
    cur.expect("of", "to", "on")
    names = targets(cur)
    cur.end()
    flags = {k: True for k in _TRANSFORMS if k in applied}
    return [("mesh.apply_transform", {"object": n, **flags}) for n in names]


def cut(cur: Cursor) -> Plan:
    """cut|subtract <object> from|out of <object>: a boolean difference."""
    tool = cur.name()
    if not cur.word("from"):
        cur.expect("out")
        cur.expect("of")
    obj = cur.name()
    cur.end()
    return "mesh.boolean", {"object": obj, "with": tool, "operation": "difference"}


def brushed(cur: Cursor) -> list[Plan]:
    """give <object> a brushed-metal shader|material [with a slight|faint scratch texture]"""
    obj = cur.name()
    cur.skip_article()
    if not (cur.word("brushed-metal") or (cur.word("brushed") and cur.word("metal"))):
        raise NoParse()
    cur.word("shader", "material", "look", "finish")
    scratches = False
    if cur.word("with", "and"):
        cur.skip_article()
        cur.word("slight", "faint", "light", "subtle", "few", "some")
        cur.expect("scratch", "scratches", "scratched")
        cur.word("texture", "pattern")
        scratches = True
    cur.end()
    return list(brushed_metal(obj, scratches))
