"""Modifier and material clause forms of the rules grammar (see docs/grammar.md)."""

from __future__ import annotations

from typing import Any

from services.planner.rules.cursor import (
    Cursor,
    Form,
    NoParse,
    Number,
    Plan,
    Plans,
    first,
    once,
)
from services.planner.rules.readers import adjectives, axis, count, shade_of, targets
from services.planner.rules.vocab import MATERIAL_WORDS, MODIFIERS

GROUP_WORDS = frozenset({"everything", "all", "every", "each", "both"})


# -- modifiers ------------------------------------------------------------------------
# The words Blender's modifier panels show where they differ from the RNA property names.
UI_WORDS: dict[str, dict[str, str]] = {
    "BEVEL": {"amount": "width"},
    "SUBSURF": {"viewport": "levels", "render": "render_levels"},
    "DISPLACE": {"midlevel": "mid_level"},
}


def _modifier_args(obj: str, mtype: str, name: str | None, props: dict[str, Any]) -> Plan:
    words = UI_WORDS.get(mtype, {})
    said = [words.get(k.lower(), k) for k in props]
    if len(set(said)) < len(said):
        raise NoParse("A setting is given twice, once by its name in Blender's panel.")
    props = dict(zip(said, props.values(), strict=True))
    args: dict[str, Any] = {"object": obj, "type": mtype}
    if name is not None:
        args["name"] = name
    if props:
        args["properties"] = props
    return "modifier.add", args


def _node_group(cur: Cursor) -> str | None:
    """``[using|with] [the] node group <G>`` of a Geometry Nodes modifier, if said."""
    start = cur.pos
    cur.word("using", "with")
    cur.skip_article()
    if cur.word("node") and cur.word("group"):
        return cur.literal_name()
    cur.pos = start
    return None


def add_modifier(cur: Cursor, mtype: str) -> Plan:
    cur.word("modifier")
    length = None
    if mtype in MEASURED and cur.word("of"):
        length = cur.length()  # "add a bevel of 2 mm to the box"
    name = cur.literal_name() if cur.word("named", "called") else None
    cur.expect("to", "on")
    obj = cur.name()
    group = _node_group(cur) if mtype == "NODES" else None
    props = cur.params() if cur.word("with") else {}
    if length is not None:
        props = {MEASURED[mtype]: length, **props}
    cur.end()
    tool, args = _modifier_args(obj, mtype, name, props)
    return tool, args if group is None else {**args, "node_group": group}


# "bevel the edges of Box a little": the bevel's width for each amount said.
BEVEL_AMOUNTS: dict[tuple[str, ...], float] = {
    ("a", "little"): 0.05,
    ("a", "bit"): 0.05,
    ("slightly",): 0.05,
    ("a", "lot"): 0.25,
}


def shorthand(mtype: str) -> Form:
    """bevel|subdivide [the edges|corners of] <Name> [a little|a lot] [[with] <params>]"""

    def form(cur: Cursor) -> list[Plan]:
        start = cur.pos
        cur.skip_article()
        own = cur.word("its") is not None
        if not cur.word("edges", "corners"):
            cur.pos = start
            names = targets(cur)
        elif not own and cur.word("of", "on"):
            names = targets(cur)
        elif cur.it_name is None:
            raise NoParse("Say whose edges: bevel the edges of Box.")
        else:
            names = [cur.it_name]  # "bevel the edges a little": of the object just made
        width = cur.phrase(BEVEL_AMOUNTS) if mtype in MEASURED else None
        if width is None and mtype in MEASURED and _length_ahead(cur):
            cur.word("by")
            width = cur.length()  # "bevel Box by 2 cm", "solidify Pot 5 mm"
        cur.word("with", "and")
        props = {} if cur.at_end() else cur.params()
        if width is not None:
            props = {MEASURED[mtype]: width, **props}
        return [_modifier_args(obj, mtype, None, props) for obj in names]

    return form


# The setting a length right after the object sets, in scene units (metres at scale 1).
MEASURED = {"BEVEL": "width", "SOLIDIFY": "thickness"}


def _length_ahead(cur: Cursor) -> bool:
    token = cur.peek(1) if (by := cur.peek()) is not None and by.lower == "by" else by
    return token is not None and token.kind == "NUMBER"


def array(cur: Cursor) -> list[Plan]:
    """array <Name> <n> times [along x|y|z] [with <d> [m] gaps|<d> [m] apart]: an Array
    modifier of ``n`` copies side by side, each ``d`` clear of the one before (its own
    width, the relative offset, plus ``d``, a constant offset: both in the object's space,
    metres at scale 1)."""
    names = targets(cur)
    n = count(cur)
    if n is None:
        raise NoParse("Say how many: array Plank 5 times along x.")
    cur.word("times", "copies")
    axis_index = axis(cur) if cur.word("along", "on") else 0
    gap: Number = 0
    if cur.word("with"):
        gap = cur.length()
        cur.expect("gaps", "gap", "apart", "spacing")
    elif (token := cur.peek()) is not None and token.kind == "NUMBER":
        gap = cur.length()
        cur.expect("apart", "gaps")
    cur.end()
    unit = [1 if i == axis_index else 0 for i in range(3)]
    props: dict[str, Any] = {"count": n, "relative_offset_displace": unit}
    if gap:
        props["use_constant_offset"] = True
        props["constant_offset_displace"] = [gap * u for u in unit]
    return [_modifier_args(obj, "ARRAY", None, props) for obj in names]


def remove_modifier(cur: Cursor) -> Plan:
    name = cur.modifier_ref()
    cur.expect("from")
    obj = cur.name()
    cur.end()
    return "modifier.remove", {"object": obj, "name": name}


def _set_modifier(obj: str, name: str, props: dict[str, Any]) -> Plan:
    return "modifier.set", {"object": obj, "name": name, "properties": props}


def _set_param_of(cur: Cursor) -> Plan:
    """set [the] <param> of [the] <M> [modifier] on <Name> to <value>"""
    cur.skip_the()
    param = cur.param_name()
    cur.expect("of")
    name = cur.modifier_ref()
    cur.expect("on")
    obj = cur.name()
    cur.expect("to")
    value = cur.value()
    cur.end()
    return _set_modifier(obj, name, {param: value})


def _set_with(cur: Cursor) -> Plan:
    """set <M> [modifier] on <Name> with <param> <value> ..."""
    name = cur.modifier_ref()
    cur.expect("on")
    obj = cur.name()
    cur.expect("with")
    return _set_modifier(obj, name, cur.params())


def _set_object_param(cur: Cursor) -> Plan:
    """set <Name> <M> [modifier] <param> to <value>"""
    obj = cur.name()
    name = cur.modifier_ref()
    param = cur.param_name()
    cur.expect("to")
    value = cur.value()
    cur.end()
    return _set_modifier(obj, name, {param: value})


# -- materials ------------------------------------------------------------------------
def _material_value(cur: Cursor, key: str, word: str) -> Any:
    if key != "base_color":
        return cur.unit(word)
    cur.skip_article()  # "set its color to a light grey"
    return shade_of(cur) or cur.color()


def _material(obj: str, values: dict[str, Any]) -> Plan:
    args: dict[str, Any] = {"object": obj}
    for key in ("base_color", "metallic", "roughness"):
        if key in values:
            args[key] = values[key]
    return "material.assign", args


def _set_material_of(cur: Cursor) -> Plan:
    """set [the] color|metallic|roughness of <Name> to <value>"""
    cur.skip_article()
    word = cur.expect(*MATERIAL_WORDS)
    cur.expect("of")
    obj = cur.name()
    cur.expect("to")
    value = _material_value(cur, MATERIAL_WORDS[word], word)
    cur.end()
    return _material(obj, {MATERIAL_WORDS[word]: value})


def _set_material_short(cur: Cursor) -> Plan:
    """set <Name> color|metallic|roughness to <value>"""
    obj = cur.name()
    word = cur.expect(*MATERIAL_WORDS)
    cur.expect("to")
    value = _material_value(cur, MATERIAL_WORDS[word], word)
    cur.end()
    return _material(obj, {MATERIAL_WORDS[word]: value})


def material_items(cur: Cursor, obj: str, color: list[float] | None) -> Plan:
    """[with] [color <c>] [metallic <x>] [roughness <x>] (any order, each at most once)."""
    cur.word("with")
    seen: dict[str, Any] = {} if color is None else {"base_color": color}
    while not cur.at_end():
        word = cur.expect(*MATERIAL_WORDS)
        key = MATERIAL_WORDS[word]
        once(seen, key, _material_value(cur, key, word), word)
    return _material(obj, seen)


def material_head(cur: Cursor) -> list[float] | None:
    """[<color, maybe toned>|#rrggbb] material|color|colour|finish"""
    cur.skip_article()
    color = shade_of(cur)
    cur.expect("material", "color", "colour", "finish")
    return color


# -- verbs ----------------------------------------------------------------------------
def verb_give(cur: Cursor) -> Plans:
    return first(cur, _give_material, _give_modifier)


def _give_material(cur: Cursor) -> Plan:
    obj = cur.name()
    return material_items(cur, obj, material_head(cur))


def _give_modifier(cur: Cursor) -> list[Plan]:
    """give <objects> a [<length>] bevel|solidify|subdivision|... [modifier] [with <params>]:
    "give the box a 2 cm bevel with 3 segments" (a length sets the width or thickness)."""
    names = targets(cur)
    cur.skip_article()
    length = cur.length() if (tok := cur.peek()) is not None and tok.kind == "NUMBER" else None
    mtype = cur.phrase(MODIFIERS)
    if mtype is None:
        raise NoParse()
    cur.word("modifier")
    if length is not None and mtype not in MEASURED:
        raise NoParse(
            f"A length sets a bevel's width or a solidify's thickness, not a {mtype.lower()}'s; "
            "give its settings by name (with levels 2)."
        )
    cur.word("with", "and")
    props = {} if cur.at_end() else cur.params()
    if length is not None:
        props = {MEASURED[mtype]: length, **props}
    return [_modifier_args(obj, mtype, None, props) for obj in names]


def _surfaces(cur: Cursor, names: list[str]) -> list[str]:
    """Of several objects, those a material goes on: lights and cameras have no surface."""
    if len(names) < 2:
        return names
    kept = [n for n in names if (t := cur.stage.things.get(n)) is None or t.type == "MESH"]
    if not kept:
        raise NoParse("None of them is a mesh: lights and cameras take no material.")
    return kept


def verb_color(cur: Cursor) -> Plans:
    """color|paint <objects> [in] [dark|light] <color>"""
    names = _surfaces(cur, targets(cur))
    cur.word("in")
    color = shade_of(cur) or cur.color()
    cur.end()
    plans = [_material(obj, {"base_color": color}) for obj in names]
    return plans[0] if len(plans) == 1 else plans


def make_looks(cur: Cursor) -> list[Plan]:
    """make <objects> <adjectives>: make Ball shiny red, make all cubes dark blue."""
    names = _surfaces(cur, targets(cur))
    looks = adjectives(cur)
    cur.end()
    material: dict[str, Any] = {
        k: looks[k] for k in ("base_color", "metallic", "roughness") if k in looks
    }
    plans: list[Plan] = []
    for obj in names:
        if material:
            plans.append(_material(obj, material))
        if "smooth" in looks:
            plans.append(("object.shade", {"name": obj, "smooth": looks["smooth"]}))
    if not plans:
        raise NoParse()
    return plans


def verb_make(cur: Cursor) -> Plan:
    if (token := cur.peek()) is not None and token.lower in GROUP_WORDS:
        raise NoParse()  # "make everything white" is a group: make_looks reads it
    obj = cur.name()
    if cur.stage.known and not cur.stage.exists(obj):
        raise NoParse()  # "make the posts blue" may be a group by noun: make_looks reads it
    if cur.word("metallic"):
        value = 1.0 if cur.at_end() else cur.unit("metallic")
        cur.end()
        return _material(obj, {"metallic": value})
    color = cur.color()
    cur.end()
    return _material(obj, {"base_color": color})


def verb_set(cur: Cursor) -> Plans:
    return first(
        cur, _set_material_of, _set_param_of, _set_with, _set_material_short, _set_object_param
    )
