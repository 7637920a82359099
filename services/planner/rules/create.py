"""Create clauses of the rules grammar: ``object.create``, with counts, rows and adjectives.

"a red metallic sphere named Ball at 0 0 2" is an ``object.create`` and a
``material.assign``; "three cubes in a row" is three creates named like Blender names
copies (``Cube``, ``Cube.001``, ``Cube.002``), ``ROW_SPACING`` apart along x.
"""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools.defaults import DEFAULT_NAMES
from services.planner.rules import places, sizes
from services.planner.rules.cursor import Cursor, NoParse, Number, Plan, once
from services.planner.rules.readers import MAX_COUNT, adjectives, along, amount, axis, count
from services.planner.rules.sizes import rounded
from services.planner.rules.vocab import MATERIAL_WORDS
from services.planner.rules.words import ROW_SPACING, UNIT_WORDS


def above(cur: Cursor) -> list[Number]:
    """``above|over|on [top of]|next to <Name>`` for a light or camera (which has no size)."""
    return places.place(cur, places.read_place(cur), places.own_half(None, None))


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
    while (token := cur.peek()) is not None:
        if token.kind == "COMMA" or token.lower == "and":
            if not _option_ahead(cur):
                return
            cur.pos += 1
            cur.word("and")
            continue
        if sizes.size_ahead(cur):
            sizes.read_size(cur, seen.setdefault("sizes", {}))
        elif word := cur.word("named", "called"):
            once(seen, "name", cur.literal_name(), word)
        elif word := cur.word("at"):
            if _object_next(cur):  # "a chair at the table": beside it
                once(seen, "place", ("next", cur.name(), None), word)
            else:
                once(seen, "location", cur.location(), word)
        elif places.place_ahead(cur):
            once(seen, "place", places.read_place(cur), token.text)
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
        elif cur.word("of"):
            sizes.read_size(cur, seen.setdefault("sizes", {}))
        elif cur.word("for", "as"):
            cur.skip_article()  # "a cone for the roof" is named Roof
            once(seen, "name", cur.literal_name().capitalize(), "for")
        elif cur.word("with"):
            _material(cur, looks)
        else:
            raise NoParse()


def _object_next(cur: Cursor) -> bool:
    """Whether an object of the scene is named next ("at the table"), not a place."""
    token, following = cur.peek(), cur.peek(1)
    if token is not None and token.lower == "the" and following is not None:
        token = following
    if token is None or token.kind != "WORD" or token.lower == "origin":
        return False
    return cur.stage.exists(cur.stage.spelled(token.text))


def _option_ahead(cur: Cursor) -> bool:
    """Whether ``,`` / ``and`` goes on with this item's options ("10 m wide and 3 m high",
    ", 2 meters apart") rather than starting the next item."""
    after = 2 if (tok := cur.peek(1)) is not None and tok.lower == "and" else 1
    if sizes.size_ahead(cur, after):
        return True
    if (word := cur.peek(after)) is not None and word.lower in OPTION_WORDS:
        return True  # "a cube named Seat, 1.8 m long, at 0 0 0.45": still the seat
    start, reached = cur.pos, cur.reached
    cur.pos, cur.reached = start + after, reached
    place = places.place_ahead(cur)  # ", behind the seat"
    cur.pos, cur.reached = start, reached
    if place:
        return True
    token, following = cur.peek(after), cur.peek(after + 1)
    if token is None or token.kind != "NUMBER":
        return False
    if following is not None and following.lower in UNIT_WORDS:
        following = cur.peek(after + 2)
    return following is not None and following.lower == "apart"


# Words only an option of the item before starts, never a new item.
OPTION_WORDS = frozenset({"at", "named", "called", "rotated", "scaled", "spaced", "along", "with"})


def _names(cur: Cursor, base: str, given: str | None, n: int, taken: set[str]) -> list[str]:
    if n == 1 and given is not None:
        if cur.stage.exists(given) or given in taken:
            at = next((i for i, t in enumerate(cur.tokens) if str(t.value) == given), None)
            raise NoParse(
                f'There is already an object "{given}": give the new one another name, '
                f"or change that one (move {given} to 0 0 0, color {given} red).",
                at,  # the name is what failed, not the end of the clause
            )
        return [given]
    base = given or base
    if n == 1 and not cur.stage.known:
        return [base]
    try:
        return cur.stage.free_names(base, n, taken)
    except ValueError:
        raise NoParse(f'There are too many objects named "{base}" to number another.') from None


def _item(cur: Cursor, taken: set[str], n: int | None = None, row: int | None = None) -> list[Plan]:
    """One ``[<count>] <adjectives> <primitive>[s] <options>`` of a create clause."""
    cur.skip_article()
    before = sizes.size_before(cur)
    if n is None:
        n = count(cur) or 1
    columns = _rows_of(cur, n)
    if columns is not None:
        n *= columns
    looks = adjectives(cur)
    before.update(sizes.size_before(cur) if not before else {})
    primitive, base = sizes.thing(cur, plural=n > 1)
    seen: dict[str, Any] = {"sizes": before} if before else {}
    _options(cur, seen, looks)
    if "sizes" in seen:
        seen["dimensions"] = sizes.dimensions_for(primitive, seen.pop("sizes"))
    ring = places.ring(cur, seen, primitive, n) or places.sides(cur, seen, primitive, n)
    n = len(ring) or n
    places.placed(cur, seen, primitive)
    if row is not None:
        seen.setdefault("axis", row)
    material: dict[str, Any] = {
        k: looks[k] for k in ("base_color", "metallic", "roughness") if k in looks
    }
    named = (
        n > 1
        or bool(looks)
        or "name" in seen
        or cur.stage.known
        or base != DEFAULT_NAMES[primitive]
    )
    names = _names(cur, base, seen.get("name"), n, taken) if named else [""]
    taken.update(names)
    plans: list[Plan] = []
    for i, name in enumerate(names):
        args: dict[str, Any] = {"primitive": primitive}
        if name:
            args["name"] = name
        location = seen.get("location")
        if ring:
            location = ring[i]
        elif columns is not None:  # rows along y, each along x
            start, spacing = location or [0, 0, 0], seen.get("spacing", ROW_SPACING)
            step = [spacing * (i % columns), spacing * (i // columns), 0]
            location = [rounded(a + b) for a, b in zip(start, step, strict=True)]
        elif n > 1:
            start = location or [0, 0, 0]
            step = along(seen.get("spacing", ROW_SPACING) * i, seen.get("axis", 0))
            location = [a + b for a, b in zip(start, step, strict=True)]
        if location is not None:
            args["location"] = location
        for key in ("rotation", "scale", "dimensions"):
            if key in seen:
                args[key] = seen[key]
        plans.append(("object.create", args))
        if material:
            plans.append(("material.assign", {"object": name, **material}))
        if "smooth" in looks:
            plans.append(("object.shade", {"name": name, "smooth": looks["smooth"]}))
    return plans


def _rows_of(cur: Cursor, rows: int) -> int | None:
    """``<rows> rows of <n>``: how many in each row, if rows are said (consumed)."""
    if cur.word("rows", "row") is None:
        return None
    cur.expect("of")
    at = cur.pos
    columns = count(cur)
    if columns is None:
        raise NoParse(f"Say how many in each row: {rows} rows of 4 cubes.")
    if rows * columns > MAX_COUNT:
        raise NoParse(
            f"{rows} rows of {columns} is {rows * columns} objects; at most {MAX_COUNT} "
            "are made at once: make fewer, or array one (array Tile 10 times along x).",
            at,
        )
    return columns


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
