"""Clauses that organise objects: parents, shading, collections, visibility, copies,
applying modifiers and keyframes (``object.*``, ``collection.*``, ``modifier.apply``,
``keyframe.insert``)."""

from __future__ import annotations

import re
from typing import Any

from services.planner.rules.cursor import Cursor, NoParse, Number, Plan, once
from services.planner.rules.readers import along, amount, axis, count, direction, targets
from services.planner.rules.sizes import rounded
from services.planner.rules.vocab import MODIFIER_DEFAULT_NAMES, MODIFIERS
from services.planner.rules.words import (
    KEYFRAME_PROPERTIES,
    ROW_SPACING,
    SHADE_WORDS,
    TIMES_WORDS,
)

MAX_FRAME = 1_048_574  # Blender's last frame


# -- parents --------------------------------------------------------------------------
def parent(cur: Cursor) -> list[Plan]:
    """parent <objects> to|under|with <Parent>"""
    children = targets(cur)
    cur.expect("to", "under", "with", "on")
    new_parent = cur.name()
    cur.end()
    return [("object.parent", {"child": c, "parent": new_parent}) for c in children]


def parent_of(cur: Cursor) -> list[Plan]:
    """make <Parent> the parent of <objects>  |  make <objects> [a] child|children of <P>"""
    first = cur.name()
    cur.skip_article()
    if cur.word("parent"):
        cur.expect("of")
        children = targets(cur)
        cur.end()
        return [("object.parent", {"child": c, "parent": first}) for c in children]
    raise NoParse()


def unparent(cur: Cursor) -> list[Plan]:
    """unparent <objects>  |  clear the parent of <objects>"""
    if cur.word("the"):
        cur.expect("parent")
        cur.expect("of")
    names = targets(cur)
    cur.end()
    return [("object.unparent", {"name": n}) for n in names]


# -- shading and visibility -----------------------------------------------------------
def shade(cur: Cursor) -> list[Plan]:
    """shade <objects> smooth|flat"""
    names = targets(cur)
    word = cur.expect(*SHADE_WORDS)
    cur.end()
    return [("object.shade", {"name": n, "smooth": SHADE_WORDS[word]}) for n in names]


def smooth(cur: Cursor) -> list[Plan]:
    """smooth <objects>: shade them smooth (the smooth modifier is "add a smooth modifier")."""
    names = targets(cur)
    cur.word("out")
    cur.end()
    return [("object.shade", {"name": n, "smooth": True}) for n in names]


def make_shaded(cur: Cursor) -> list[Plan]:
    """make <objects> smooth|flat [shaded]"""
    names = targets(cur)
    word = cur.expect(*SHADE_WORDS)
    cur.word("shaded", "shading")
    cur.end()
    return [("object.shade", {"name": n, "smooth": SHADE_WORDS[word]}) for n in names]


def _where(cur: Cursor) -> tuple[bool, bool]:
    """``in|from [the] render[s]|viewport`` or ``everywhere``: (viewport, render) touched."""
    if cur.word("everywhere", "completely", "entirely"):
        return True, True
    if not cur.word("in", "from", "for", "during"):
        return True, False
    cur.skip_article()
    place = cur.expect("render", "renders", "rendering", "renderer", "final", "viewport", "view")
    if place == "final":
        cur.expect("render")
    return (True, False) if place in ("viewport", "view") else (False, True)


def visibility(visible: bool) -> Any:
    """hide|show|unhide <objects> [in|from renders|the viewport|everywhere]"""

    def form(cur: Cursor) -> list[Plan]:
        names = targets(cur)
        viewport, render = _where(cur)
        cur.end()
        where = {k: visible for k, on in (("viewport", viewport), ("render", render)) if on}
        return [("object.visibility", {"name": n, **where}) for n in names]

    return form


def make_visible(cur: Cursor) -> list[Plan]:
    """make <objects> invisible|visible|hidden [in renders|...]"""
    names = targets(cur)
    word = cur.expect("invisible", "visible", "hidden")
    viewport, render = _where(cur) if cur.peek() is not None else (True, True)
    cur.end()
    visible = word == "visible"
    where = {k: visible for k, on in (("viewport", viewport), ("render", render)) if on}
    return [("object.visibility", {"name": n, **where}) for n in names]


# -- collections ----------------------------------------------------------------------
def collection_create(cur: Cursor) -> Plan:
    """add|create a [new] collection named|called <C> [in|inside|under <Parent>]"""
    cur.word("new")
    cur.expect("collection")
    cur.expect("named", "called")
    name = cur.literal_name()
    args: dict[str, Any] = {"name": name}
    if cur.word("in", "inside", "under"):
        cur.skip_article()
        args["parent"] = cur.literal_name()
        cur.word("collection")
    cur.end()
    return "collection.create", args


def put_in(said: bool) -> Any:
    """put|group <objects> in|into [a new|the] [collection] [named] <C> [collection]; with
    ``said``, the word ``collection`` is required (move Box to the Props collection)."""

    def form(cur: Cursor) -> list[Plan]:
        names = targets(cur)
        cur.expect("in", "into", "inside", "to")
        new = cur.word("a", "an") is not None
        cur.word("the")
        new = cur.word("new") is not None or new
        word = cur.word("collection") is not None
        if word:
            cur.word("named", "called")
        name = cur.literal_name()
        word = cur.word("collection") is not None or word
        cur.end()
        if said and not word:
            raise NoParse()
        move: Plan = ("collection.move", {"objects": names, "collection": name})
        return [("collection.create", {"name": name}), move] if new else [move]

    return form


# -- copies, modifiers, keyframes -----------------------------------------------------
def duplicate(cur: Cursor) -> list[Plan]:
    """duplicate|copy <Name> [<n> times|twice] [along <axis>] [spaced <d>] [named <New>]
    [linked]"""
    name = cur.name()
    n, seen = 1, dict[str, Any]()
    while (token := cur.peek()) is not None:
        if token.lower in TIMES_WORDS:
            cur.pos += 1
            n = TIMES_WORDS[token.lower]
        elif token.kind == "NUMBER" and (offset := _offset(cur)) is not None:
            once(seen, "offset", offset, token.text)  # "duplicate Leg 1.6 m to the right"
        elif token.kind == "NUMBER":
            n = count(cur) or 1
            cur.expect("times")
        elif cur.word("along", "on"):
            seen["axis"] = axis(cur)
        elif cur.word("spaced", "every"):
            cur.word("by")
            seen["spacing"] = amount(cur)
        elif cur.word("named", "called", "as"):
            seen["name"] = cur.literal_name()
        elif cur.word("linked"):
            seen["linked"] = True
        else:
            raise NoParse()
    return _copies(cur, name, n, seen)


def _offset(cur: Cursor) -> list[Number] | None:
    """``<d> [m] [to the] left|right|up|...`` if next (consumed), else None (nothing read)."""
    start, reached = cur.pos, cur.reached
    offset = direction(cur)
    if offset is None:
        cur.pos, cur.reached = start, reached
    return offset


def copies_of(cur: Cursor) -> list[Plan]:
    """make <n> [linked] copies|duplicates of <Name> [along <axis>] [spaced <d>]"""
    n = count(cur)
    if n is None:
        if not cur.word("a", "an"):
            raise NoParse()
        n = 1
    seen: dict[str, Any] = {"linked": True} if cur.word("linked") else {}
    cur.expect("copies", "copy", "duplicates", "duplicate", "instances")
    cur.expect("of")
    name = cur.name()
    while (token := cur.peek()) is not None:
        if token.kind == "COMMA" or token.lower == "and":
            cur.pos += 1  # "along x, 0.3 m apart"
        elif cur.word("along", "on"):
            seen["axis"] = axis(cur)
        elif cur.word("spaced", "every"):
            cur.word("by")
            seen["spacing"] = amount(cur)
        elif token.kind == "NUMBER":
            seen["spacing"] = amount(cur)
            cur.expect("apart")
        else:
            raise NoParse()
    return _copies(cur, name, n, seen)


def _copies(cur: Cursor, name: str, n: int, seen: dict[str, Any]) -> list[Plan]:
    try:
        if "name" in seen:
            names = cur.stage.free_names(seen["name"], n)
        else:
            # numbered from the name without its suffix, as Blender does: Post.001 -> Post.002
            base = re.sub(r"\.\d{3}$", "", name)
            names = cur.stage.free_names(base, n, taken={name})
    except ValueError:
        raise NoParse(f'There are too many copies of "{name}" to number another.') from None
    spread = n > 1 or "axis" in seen or "spacing" in seen
    plans: list[Plan] = []
    for i, new_name in enumerate(names, 1):
        args: dict[str, Any] = {"name": name, "new_name": new_name}
        if seen.get("linked"):
            args["linked"] = True
        if "offset" in seen:
            args["offset"] = [rounded(v * i) for v in seen["offset"]]
        elif spread:
            step = rounded(seen.get("spacing", ROW_SPACING) * i)  # 0.3 * 3 is 0.9, not 0.8999...
            args["offset"] = along(step, seen.get("axis", 0))
        plans.append(("object.duplicate", args))
    return plans


def apply_modifier(cur: Cursor) -> list[Plan]:
    """apply [the] <M> [modifier] on|of|to <Name>  |  apply all [the] modifiers on <Name>"""
    if cur.word("all", "every"):
        cur.word("the")
        cur.expect("modifiers", "modifier")
        cur.expect("on", "of", "to", "from")
        obj = cur.name()
        cur.end()
        thing = cur.stage.things.get(obj)
        if thing is None or not thing.modifiers:
            raise NoParse(f'I do not know of any modifier on "{obj}" to apply; name it.')
        return [("modifier.apply", {"object": obj, "modifier": m}) for m, _ in thing.modifiers]
    cur.skip_the()
    mtype = cur.phrase(MODIFIERS)
    written = None if mtype is not None else cur.literal_name()
    cur.word("modifier")
    cur.expect("on", "of", "to", "from")
    obj = cur.name()
    cur.end()
    if mtype is not None:
        written = cur.stage.modifier(obj, mtype) or MODIFIER_DEFAULT_NAMES[mtype]
    return [("modifier.apply", {"object": obj, "modifier": written})]


def frame(cur: Cursor) -> int:
    """``[at|on] frame <n>``."""
    cur.word("at", "on")
    cur.expect("frame")
    value = cur.number()
    if not isinstance(value, int) or not 0 <= value <= MAX_FRAME:
        raise NoParse(f"A frame is a whole number from 0 to {MAX_FRAME}.")
    return value


def _properties(cur: Cursor) -> list[str]:
    found: list[str] = []
    while (token := cur.peek()) is not None and token.lower in KEYFRAME_PROPERTIES:
        cur.pos += 1
        found.append(KEYFRAME_PROPERTIES[token.lower])
        cur.word("and")
    return list(dict.fromkeys(found))


def keyframe(cur: Cursor) -> list[Plan]:
    """keyframe|key [the] <property> of <Name> | <Name> [<property>] [at frame <n>]

    Without a property: the properties the clause before changed (``move Box ... and
    keyframe it``), else location, rotation and scale. Without a frame: the one an
    ``at frame <n>`` said before.
    """
    cur.word("a", "the")
    cur.word("keyframe", "keyframes", "key")
    cur.word("for", "on")
    cur.word("the")
    props = _properties(cur)
    if props:
        cur.expect("of", "on", "for")
    name = cur.name()
    props = props or _properties(cur)
    at = frame(cur) if not cur.at_end() else cur.stage.frame
    cur.end()
    if at is None:
        raise NoParse("Say at which frame: keyframe Box location at frame 1.")
    if not props:
        props = cur.stage.changed.get(name) or ["location", "rotation", "scale"]
    return [("keyframe.insert", {"name": name, "property": p, "frame": at}) for p in props]
