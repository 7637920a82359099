"""Create clauses of the rules grammar: ``object.create``, with counts, rows and adjectives.

"a red metallic sphere named Ball at 0 0 2" is an ``object.create`` and a
``material.assign``; "three cubes in a row" is three creates named like Blender names
copies (``Cube``, ``Cube.001``, ``Cube.002``), ``ROW_SPACING`` apart along x.
"""

from __future__ import annotations

from typing import Any

from services.planner.backends.rules_cursor import Cursor, NoParse, Number, Plan, once
from services.planner.backends.rules_readers import adjectives, along, amount, axis, count
from services.planner.backends.rules_vocab import MATERIAL_WORDS, PRIMITIVES
from services.planner.backends.rules_words import ABOVE, DEFAULT_NAMES, PLURALS, ROW_SPACING


def above(cur: Cursor) -> list[Number]:
    """``above|over|on top of <Name>``: ``ABOVE`` units over the object's location."""
    if cur.word("on"):
        cur.expect("top")
        cur.expect("of")
    else:
        cur.expect("above", "over")
    name = cur.name()
    where = cur.stage.location(name)
    if where is None:
        raise NoParse(f'I do not know where "{name}" is, so I cannot place something above it.')
    return [where[0], where[1], round(where[2] + ABOVE, 4)]


def _material(cur: Cursor, seen: dict[str, Any]) -> None:
    """``with [color <c>] [metallic <x>] [roughness <x>]``, each at most once."""
    while (token := cur.peek()) is not None and token.lower in MATERIAL_WORDS:
        cur.pos += 1
        key = MATERIAL_WORDS[token.lower]
        value = cur.color() if key == "base_color" else cur.unit(token.lower)
        once(seen, key, value, token.text)
    if not seen:
        raise NoParse()


def _options(cur: Cursor, seen: dict[str, Any], looks: dict[str, Any]) -> None:
    """The options after the primitive, up to the clause end or the next item."""
    while (token := cur.peek()) is not None and token.kind != "COMMA" and token.lower != "and":
        if word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            once(seen, "location", cur.location(), word)
        elif token.lower in ("above", "over", "on"):
            once(seen, "location", above(cur), token.text)
        elif word := cur.word("rotated"):
            cur.word("by")
            once(seen, "rotation", cur.vector(), word)
            cur.degrees()
        elif word := cur.word("scaled"):
            cur.word("by")
            once(seen, "scale", cur.number_or_vector(), word)
        elif word := cur.word("in"):
            cur.skip_article()
            cur.expect("row", "line")
            once(seen, "row", True, "in a row")
        elif word := cur.word("along"):
            once(seen, "axis", axis(cur), word)
        elif word := cur.word("spaced", "every"):
            cur.word("by")
            once(seen, "spacing", amount(cur), word)
        elif token.kind == "NUMBER":
            spacing = amount(cur)
            cur.expect("apart")
            once(seen, "spacing", spacing, "apart")
        elif cur.word("with"):
            _material(cur, looks)
        else:
            raise NoParse()


def _names(cur: Cursor, primitive: str, given: str | None, n: int, taken: set[str]) -> list[str]:
    if n == 1 and given is not None:
        return [given]
    base = given or DEFAULT_NAMES[primitive]
    if n == 1 and not cur.stage.known:
        return [base]
    try:
        return cur.stage.free_names(base, n, taken)
    except ValueError:
        raise NoParse(f'There are too many objects named "{base}" to number another.') from None


def _item(cur: Cursor, taken: set[str], n: int | None = None, row: int | None = None) -> list[Plan]:
    """One ``[<count>] <adjectives> <primitive>[s] <options>`` of a create clause."""
    cur.skip_article()
    if n is None:
        n = count(cur) or 1
    looks = adjectives(cur)
    primitive = cur.phrase(PLURALS) or cur.phrase(PRIMITIVES)
    if primitive is None:
        raise NoParse()
    seen: dict[str, Any] = {}
    _options(cur, seen, looks)
    if row is not None:
        seen.setdefault("axis", row)
    material: dict[str, Any] = {
        k: looks[k] for k in ("base_color", "metallic", "roughness") if k in looks
    }
    named = n > 1 or bool(looks) or "name" in seen or cur.stage.known
    names = _names(cur, primitive, seen.get("name"), n, taken) if named else [""]
    taken.update(names)
    plans: list[Plan] = []
    for i, name in enumerate(names):
        args: dict[str, Any] = {"primitive": primitive}
        if name:
            args["name"] = name
        location = seen.get("location")
        if n > 1:
            start = location or [0, 0, 0]
            step = along(seen.get("spacing", ROW_SPACING) * i, seen.get("axis", 0))
            location = [a + b for a, b in zip(start, step, strict=True)]
        if location is not None:
            args["location"] = location
        for key in ("rotation", "scale"):
            if key in seen:
                args[key] = seen[key]
        plans.append(("object.create", args))
        if material:
            plans.append(("material.assign", {"object": name, **material}))
        if "smooth" in looks:
            plans.append(("object.shade", {"name": name, "smooth": looks["smooth"]}))
    return plans


def _more(cur: Cursor) -> bool:
    """Whether another item follows: ``, a cone``, ``and two spheres``."""
    token = cur.peek()
    if token is None or not (token.kind == "COMMA" or token.lower == "and"):
        return False
    cur.pos += 1
    cur.word("and")
    return True


def create(cur: Cursor) -> list[Plan]:
    """add|create [a|<count>] <adjectives> <primitive>[s] <options> [, and <more> ...]"""
    taken: set[str] = set()
    plans = _item(cur, taken)
    while _more(cur):
        plans += _item(cur, taken)
    return plans


def array_of(cur: Cursor) -> list[Plan]:
    """[an] array|row|line of <n> <adjectives> <primitive>s <options>: a row of new objects."""
    cur.skip_article()
    cur.expect("array", "row", "line")
    cur.expect("of")
    n = count(cur)
    if n is None:
        raise NoParse()
    plans = _item(cur, set(), n, row=0)
    cur.end()
    return plans
