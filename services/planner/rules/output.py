"""Text, curve, rig, constraint, render, HDRI and export clause forms of the rules grammar
(docs/grammar.md, "Text, curves, rigs, render and export")."""

from __future__ import annotations

from typing import Any

from services.planner.rules.cursor import Cursor, NoParse, Plan, once
from services.planner.rules.readers import axis

CURVE_KINDS: dict[tuple[str, ...], str] = {
    ("bezier", "curve"): "bezier",
    ("curve",): "bezier",
    ("bezier", "circle"): "circle",
    ("circle", "curve"): "circle",
    ("nurbs", "path"): "path",  # a bare "path" is a flat strip, a plane
    ("curve", "path"): "path",
}
ENGINES = {"cycles": "cycles", "eevee": "eevee", "workbench": "workbench"}
FORMATS = {
    "glb": "glb",
    "gltf": "glb",
    "fbx": "fbx",
    "obj": "obj",
    "usd": "usd",
    "usdc": "usd",
    "stl": "stl",
}
MAX_TEXT = 1024  # text.create's body, in characters


def _placed(cur: Cursor, seen: dict[str, Any]) -> dict[str, Any]:
    """``[named|called <N>] [at <vec>]`` in any order, as far as they go."""
    while not cur.at_end():
        if word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            once(seen, "location", cur.location(), word)
        else:
            break
    return seen


def _named(cur: Cursor, seen: dict[str, Any], default: str) -> dict[str, Any]:
    """``seen`` with a free name when none was said and the scene is known, so later
    clauses (and "it") can refer to what it makes."""
    if "name" not in seen and cur.stage.known:
        seen["name"] = cur.stage.free_names(default, 1)[0]
    return seen


def add_text(cur: Cursor) -> Plan:
    """add [a] text "<body>" [named <N>] [at <vec>] [extruded [by] <n>] [size <n>]"""
    cur.skip_article()
    cur.expect("text")
    token = cur.take()
    if token.kind != "STRING" or not str(token.value):
        raise NoParse('Quote the text: add text "Hello".')
    body = str(token.value)
    if len(body) > MAX_TEXT:
        raise NoParse(f"A text holds at most {MAX_TEXT} characters.")
    cur.read()
    seen: dict[str, Any] = {"body": body}
    while not cur.at_end():
        start = cur.pos
        _placed(cur, seen)
        if word := cur.word("extruded", "extrude", "depth"):
            cur.word("by", "to")
            once(seen, "extrude", cur.number(), word)
        elif word := cur.word("size", "sized"):
            once(seen, "size", cur.number(), word)
        elif word := cur.word("bevel", "bevelled", "beveled"):
            cur.word("by", "of")
            once(seen, "bevel_depth", cur.number(), word)
        elif cur.word("with", "and"):
            continue
        elif cur.pos == start:
            raise NoParse()
    return "text.create", _named(cur, seen, "Text")


def add_curve(cur: Cursor) -> Plan:
    """add [a] (curve|bezier curve|circle curve|bezier circle|path) [named <N>] [at <vec>]
    [with bevel <n>]"""
    cur.skip_article()
    kind = cur.phrase(CURVE_KINDS)
    if kind is None:
        raise NoParse()
    default = {"bezier": "BezierCurve", "circle": "BezierCircle", "path": "NurbsPath"}[kind]
    seen: dict[str, Any] = {"kind": kind}
    while not cur.at_end():
        start = cur.pos
        _placed(cur, seen)
        if word := cur.word("bevel", "thickness"):
            cur.word("of", "depth")
            once(seen, "bevel_depth", cur.number(), word)
        elif word := cur.word("radius"):
            if kind != "circle":
                raise NoParse("Only a circle takes a radius.")
            once(seen, "radius", cur.number(), word)
        elif cur.word("with", "and"):
            continue
        elif cur.pos == start:
            raise NoParse()
    return "curve.create", _named(cur, seen, default)


def add_empty(cur: Cursor) -> Plan:
    """add [an] empty [named <N>] [at <vec>]"""
    cur.skip_article()
    cur.expect("empty")
    seen = _placed(cur, {})
    cur.end()
    return "empty.create", _named(cur, seen, "Empty")


def add_armature(cur: Cursor) -> Plan:
    """add [an] armature|rig|skeleton [named <N>] [at <vec>]: one bone, 1 unit up"""
    cur.skip_article()
    cur.expect("armature", "rig", "skeleton")
    seen = _placed(cur, {})
    cur.end()
    return "armature.create", _named(cur, seen, "Armature")


def add_hdri(cur: Cursor) -> Plan:
    """add|use [the|a] <name> hdri [with strength <n>]"""
    cur.skip_article()
    token = cur.take()
    if token.kind != "WORD" or cur.peek() is None or cur.peek().lower not in ("hdri", "hdr"):  # type: ignore[union-attr]
        raise NoParse()
    cur.pos += 1
    args: dict[str, Any] = {"hdri": token.lower}
    if cur.word("with", "at"):
        cur.word("strength", "brightness")
        args["strength"] = cur.number()
    cur.end()
    return "world.hdri", args


def render_with(cur: Cursor) -> Plan:
    """render with|in|using <engine> [at|with <n> samples] [at <w> x <h>]"""
    cur.expect("with", "in", "using")
    engine = cur.word(*ENGINES)
    if engine is None:
        raise NoParse("Render with cycles, eevee or workbench.")
    args: dict[str, Any] = {"engine": ENGINES[engine]}
    while not cur.at_end():
        cur.word("at", "with", "and")
        value = cur.number()
        if cur.word("samples", "sample"):
            once(args, "samples", value, "samples")
        elif cur.word("x", "by"):
            once(args, "resolution", [value, cur.number()], "resolution")
            cur.word("pixels", "px")
        else:
            raise NoParse("Say samples (64 samples) or a size (1920 x 1080).")
    return "render.set", args


def export_as(cur: Cursor) -> Plan:
    """export [it|the scene|everything] as|to [a|an] glb|gltf|fbx|obj|usd|stl [file]"""
    cur.word("it", "everything", "this")
    if cur.word("the"):
        cur.expect("scene")
    cur.expect("as", "to")
    cur.skip_article()
    fmt = cur.word(*FORMATS)
    if fmt is None:
        raise NoParse("Export as glb, fbx, obj, usd or stl.")
    cur.word("file")
    cur.end()
    return "scene.export", {"format": FORMATS[fmt]}


VIEWS = {
    ("agx",): "AgX",
    ("standard",): "Standard",
    ("filmic",): "Filmic",
    ("filmic", "log"): "Filmic Log",
    ("khronos",): "Khronos PBR Neutral",
    ("pbr", "neutral"): "Khronos PBR Neutral",
    ("false", "color"): "False Color",
    ("raw",): "Raw",
}


def set_samples(cur: Cursor) -> Plan:
    """set|change [the] [render] samples to <n>"""
    cur.skip_article()
    cur.word("render")
    cur.expect("samples")
    cur.expect("to")
    samples = cur.number()
    cur.end()
    return "render.set", {"samples": samples}


def set_view(cur: Cursor) -> Plan:
    """set|change [the] view transform to <view> [with [the|a] <look> look]"""
    cur.skip_article()
    cur.word("color", "colour")
    cur.expect("view")
    cur.expect("transform")
    cur.expect("to")
    view = cur.phrase(VIEWS)
    if view is None:
        raise NoParse("Say a view transform: agx, standard, filmic, khronos, raw, false color.")
    args: dict[str, Any] = {"view_transform": view}
    if cur.word("with"):
        cur.skip_article()
        words = []
        while (token := cur.peek()) is not None and token.lower != "look":
            words.append(token.text.capitalize())
            cur.pos += 1
        cur.expect("look")
        args["look"] = " ".join(words) or "None"
    cur.end()
    return "render.color", args


def make_track(cur: Cursor) -> Plan:
    """make <Name> (track|face) <Target> | make <Name> follow [the path|the curve] <Curve> |
    make <Name> copy [the] location|rotation of <Target>"""
    obj = cur.name()
    if cur.word("copy"):
        cur.word("the")
        what = cur.expect("location", "position", "rotation")
        cur.expect("of", "from")
        target = cur.name()
        cur.end()
        tool = "constraint.copy_rotation" if what == "rotation" else "constraint.copy_location"
        return tool, {"object": obj, "target": target}
    if cur.word("follow"):
        cur.word("the")
        cur.word("path", "curve")
        target = cur.name()
        cur.end()
        return "constraint.follow_path", {"object": obj, "target": target}
    if not cur.word("track", "face"):
        cur.expect("look", "point")
        cur.expect("at")
    target = cur.name()
    cur.end()
    return "constraint.track_to", {"object": obj, "target": target}


def convert(cur: Cursor) -> Plan:
    """convert|turn <Name> (to|into) [a] mesh"""
    obj = cur.name()
    cur.expect("to", "into")
    cur.skip_article()
    cur.expect("mesh")
    cur.end()
    return "curve.to_mesh", {"name": obj}


def bind(cur: Cursor) -> Plan:
    """bind|skin <Mesh> to <Armature> [with automatic weights]"""
    obj = cur.name()
    cur.expect("to")
    rig = cur.name()
    if cur.word("with"):
        cur.word("automatic", "auto")
        cur.expect("weights")
    cur.end()
    return "armature.bind", {"object": obj, "armature": rig}


def pose_bone(cur: Cursor) -> Plan:
    """rotate|turn [the] bone <B> of <armature> [by] <n> [degrees] around|about|on <axis>:
    the bone's pose, set absolutely about that axis"""
    cur.word("the")
    cur.expect("bone")
    bone = cur.literal_name()
    cur.expect("of", "in")
    rig = cur.name()
    cur.word("by")
    angle = cur.number()
    cur.word("degrees", "degree", "deg")
    cur.expect("around", "about", "on")
    index = axis(cur)
    cur.end()
    rotation: list[Any] = [0, 0, 0]
    rotation[index] = angle
    return "armature.pose", {"armature": rig, "bone": bone, "rotation": rotation}
