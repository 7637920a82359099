"""Camera, light and world clauses of the rules grammar (``camera.*``, ``light.*``,
``world.set``)."""

from __future__ import annotations

from typing import Any

from services.planner.rules import places
from services.planner.rules.create import above
from services.planner.rules.cursor import Cursor, NoParse, Number, Plan, once
from services.planner.rules.readers import shade_of
from services.planner.rules.words import (
    LIGHT_KINDS,
    LIGHT_NAMES,
    LIGHT_NOUNS,
    LIGHT_TINTS,
    POWER_WORDS,
    WORLD_WORDS,
)

FRONT_VIEW = (0, -10, 5)  # where a camera looking at the origin stands, from its target


def _new_name(cur: Cursor, given: str | None, default: str) -> str:
    if given is not None:
        return given
    return cur.stage.free_names(default, 1)[0] if cur.stage.known else default


def the_one(cur: Cursor, kind: str, word: str) -> str:
    """``the camera`` / ``the light``: the only object of that type the stage has."""
    names = cur.stage.of_type(kind)
    if not cur.stage.known:
        raise NoParse(f"Name the {word}: the planner was not told what is in the scene.")
    if len(names) == 1:
        return names[0]
    if not names:
        raise NoParse(f"There is no {word} in the scene; add one first (add a {word} at 0 -10 5).")
    raise NoParse(f"Which {word}? The scene has {', '.join(names)}.")


def camera_name(cur: Cursor) -> str:
    """A camera: ``[the] camera`` (the only one) or its name."""
    start = cur.pos
    cur.skip_article()
    if cur.word("camera"):
        return the_one(cur, "CAMERA", "camera")
    cur.pos = start
    return cur.name()


def _look_target(cur: Cursor) -> dict[str, Any]:
    """``<Name>``, ``<vec>`` or ``the origin``: what to look at."""
    token = cur.peek()
    if token is not None and token.kind in ("NUMBER", "LPAREN"):
        return {"look_at_point": cur.vector()}
    start = cur.pos
    cur.skip_article()
    if cur.word("origin"):
        return {"look_at_point": [0, 0, 0]}
    cur.pos = start
    return {"look_at_object": cur.name()}


def look_at(cur: Cursor) -> dict[str, Any]:
    """``at|towards <Name>|<vec>``: ``look_at_point`` or ``look_at_object``."""
    cur.expect("at", "towards", "toward", "to")
    return _look_target(cur)


def _lens(cur: Cursor) -> Number:
    cur.skip_article()
    if cur.word("lens", "focal"):
        cur.word("length")
        cur.word("of")
    value = cur.number()
    cur.word("mm", "millimeter", "millimeters")
    cur.word("lens")
    if not 1 <= value <= 5000:
        raise NoParse("A lens is 1 to 5000 mm.")
    return value


def camera_create(cur: Cursor) -> Plan:
    """add a camera [named <N>] [at <vec>|above <Name>] [rotated <vec>] [looking at <Name>|<vec>]
    [with a <n>mm lens] [as the active camera]"""
    seen: dict[str, Any] = {}
    while (token := cur.peek()) is not None:
        if word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            once(seen, "location", cur.location(), word)
        elif places.place_ahead(cur):
            once(seen, "location", above(cur), token.text)
        elif word := cur.word("rotated"):
            once(seen, "rotation", cur.vector(), word)
            cur.degrees()
        elif word := cur.word("looking", "pointing", "aimed", "aiming"):
            once(seen, "look", look_at(cur), word)
        elif word := cur.word("facing"):
            once(seen, "look", _look_target(cur), word)
        elif word := cur.word("with"):
            once(seen, "lens", _lens(cur), "lens")
        elif word := cur.word("as"):
            cur.skip_article()
            cur.expect("active")
            cur.word("camera")
            seen["make_active"] = True
        else:
            raise NoParse()
    args: dict[str, Any] = {"name": _new_name(cur, seen.get("name"), "Camera")}
    for key in ("location", "rotation", "lens"):
        if key in seen:
            args[key] = seen[key]
    args.update(seen.get("look", {}))
    if "location" not in args:
        target = args.get("look_at_point") or cur.stage.location(args.get("look_at_object", ""))
        if target is not None and all(v == 0 for v in target):
            # a camera made at the origin cannot look at it: stand in front, above
            args["location"] = [a + b for a, b in zip(target, FRONT_VIEW, strict=True)]
    if seen.get("make_active"):
        args["make_active"] = True
    return "camera.create", args


def point(cur: Cursor) -> Plan:
    """point|aim <camera> at|towards <Name>|<vec>"""
    name = camera_name(cur)
    look = look_at(cur)
    cur.end()
    return "camera.set", {"name": name, **look}


def make_look(cur: Cursor) -> Plan:
    """make|have <camera> look|point|aim at <Name>|<vec>"""
    name = camera_name(cur)
    cur.expect("look", "point", "aim", "face")
    look = look_at(cur)
    cur.end()
    return "camera.set", {"name": name, **look}


def set_lens(cur: Cursor) -> Plan:
    """set the lens of <camera> to <n> [mm]  |  set <camera> lens to <n>"""
    cur.skip_article()
    if cur.word("lens", "focal"):
        cur.word("length")
        cur.expect("of")
        name = camera_name(cur)
    else:
        name = camera_name(cur)
        cur.expect("lens")
    cur.expect("to")
    value = _lens(cur)
    cur.end()
    return "camera.set", {"name": name, "lens": value}


def active_camera(cur: Cursor) -> Plan:
    """make|set <camera> [the] active [camera]  |  set the active camera to <camera>"""
    cur.skip_article()
    if cur.word("active"):
        cur.expect("camera")
        cur.expect("to")
        name = camera_name(cur)
    else:
        name = camera_name(cur)
        cur.word("as")
        cur.skip_article()
        cur.expect("active")
        cur.word("camera")
    cur.end()
    return "camera.set_active", {"name": name}


def _power(cur: Cursor) -> Number:
    cur.skip_article()
    cur.word(*POWER_WORDS)
    cur.word("of")
    value = cur.number()
    cur.word("w", "watts", "watt")
    if value < 0:
        raise NoParse("A light's power cannot be negative.")
    return value


def light_create(cur: Cursor, color: list[float] | None) -> Plan:
    """add a [warm|cool|<color>] [point|sun|spot|area] light [named <N>] [at <vec>|above
    <Name>] [with power|strength <n>] [color <c>] [size <n>]"""
    token, following = cur.peek(), cur.peek(1)
    if (
        token is not None
        and token.kind == "WORD"
        and token.lower not in LIGHT_KINDS
        and following is not None
        and following.lower in LIGHT_NOUNS
    ):
        cur.pos += 1  # "a ceiling light", "a desk lamp": where it hangs, not its kind
    found = cur.word(*LIGHT_KINDS, "spotlight")
    kind = "spot" if found == "spotlight" else LIGHT_KINDS.get(found or "point", "point")
    if found == "sun":
        cur.word(*LIGHT_NOUNS)  # "a sun" is a sun light
    elif found != "spotlight":
        cur.expect(*LIGHT_NOUNS)
    seen: dict[str, Any] = {} if color is None else {"color": color}
    while (token := cur.peek()) is not None:
        if token.kind == "COMMA" or token.lower == "and":
            cur.pos += 1  # "with 150 W, 2 m left of the pedestal": still this light
        elif word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            once(seen, "location", cur.location(), word)
        elif places.place_ahead(cur):
            once(seen, "location", above(cur), token.text)
        elif word := cur.word("rotated"):
            once(seen, "rotation", cur.vector(), word)
            cur.degrees()
        elif word := cur.word("with", "of"):
            _light_option(cur, seen)
        elif token.lower in POWER_WORDS or token.kind == "NUMBER":
            once(seen, "power", _power(cur), "power")
        else:
            _light_option(cur, seen)
    name = _new_name(cur, seen.get("name"), LIGHT_NAMES[kind])
    args: dict[str, Any] = {"kind": kind, "name": name}
    for key in ("location", "rotation", "power", "color", "size"):
        if key in seen:
            args[key] = seen[key]
    return "light.create", args


def _light_option(cur: Cursor, seen: dict[str, Any]) -> None:
    cur.skip_article()
    token = cur.peek()
    if token is None:
        raise NoParse()
    if token.lower in ("color", "colour"):
        cur.pos += 1
        once(seen, "color", cur.color(), token.text)
    elif token.lower == "size":
        cur.pos += 1
        once(seen, "size", cur.number(), "size")
    else:
        once(seen, "power", _power(cur), "power")


def light_head(cur: Cursor) -> list[float] | None:
    """The tint or color before a light: ``warm``, ``cool``, a color word; None if none."""
    color = shade_of(cur)  # "warm white" is a toned color, "warm" alone a tint
    token = cur.peek()
    if color is None and token is not None and token.lower in LIGHT_TINTS:
        cur.pos += 1
        return list(LIGHT_TINTS[token.lower])
    return color


def light_looks(cur: Cursor) -> Plan:
    """make|color|paint <light> [in] warm|cool|<color>: the light's color (``light.set``)."""
    try:
        name = _light_name(cur)
    except NoParse:
        raise NoParse() from None  # not a light: the material forms say what went wrong
    thing = cur.stage.things.get(name)
    if thing is None or thing.type != "LIGHT":
        raise NoParse()  # only a light the scene shows: anything else takes a material
    cur.word("light", "lamp")  # "the key light"
    cur.word("in")
    color = light_head(cur)
    if color is None:
        color = cur.color()
    cur.end()
    return "light.set", {"name": name, "color": color}


def set_light(cur: Cursor) -> Plan:
    """set the power|strength|size|color of <Light> to <value>  |  set <Light> power to <n>"""
    cur.skip_article()
    if (what := cur.word(*POWER_WORDS, "size")) is not None:
        cur.expect("of")
        name = _light_name(cur)
    else:
        name = _light_name(cur)
        what = cur.expect(*POWER_WORDS, "size")
    cur.expect("to")
    key = "size" if what == "size" else "power"
    value = cur.number() if key == "size" else _power(cur)
    cur.end()
    return "light.set", {"name": name, key: value}


def light_power(cur: Cursor) -> Plan:
    """make <light> <n> [W|watts]: the light's power (``light.set``)."""
    try:
        name = _light_name(cur)
    except NoParse:
        raise NoParse() from None  # not a light: the size forms say what went wrong
    thing = cur.stage.things.get(name)
    if thing is None or thing.type != "LIGHT":
        raise NoParse()
    token = cur.peek()
    if token is None or token.kind != "NUMBER":
        raise NoParse()
    power = _power(cur)
    cur.end()
    return "light.set", {"name": name, "power": power}


def _light_name(cur: Cursor) -> str:
    start = cur.pos
    cur.skip_the()
    if cur.word("light", "lamp", "sun") and cur.peek() is not None:
        return the_one(cur, "LIGHT", "light")
    cur.pos = start
    name = cur.name()
    thing = cur.stage.things.get(name)
    if cur.stage.known and thing is not None and thing.type != "LIGHT":
        raise NoParse(f'"{name}" is not a light.')
    return name


def world(cur: Cursor) -> Plan:
    """make|set|change|turn [the] background|world|sky [color] [to] <color> [strength <n>]
    | set [the] world|background strength to <n>"""
    cur.skip_article()
    cur.expect(*WORLD_WORDS)
    args: dict[str, Any] = {}
    if cur.word("strength", "brightness"):
        cur.expect("to")
        args["strength"] = cur.number()
    else:
        cur.word("color", "colour")
        cur.word("to")
        color = shade_of(cur)
        args["color"] = color if color is not None else cur.color()
        if cur.word("with"):
            cur.word("strength", "brightness")
            args["strength"] = cur.number()
    cur.end()
    if args.get("strength", 0) < 0:
        raise NoParse("The world's strength cannot be negative.")
    return "world.set", args
