"""Transform clauses of the rules grammar: ``object.transform``, absolute and relative.

Relative changes ("up by 2", "45 degrees around z", "twice as big") use the tool's own
``mode: relative`` (location and rotation add, scale multiplies), so they are right
whatever the object's transform is when the operation runs. Every form takes a list or a
group of objects ("move Box and Ball up 2", "scale all cubes by 2"): one operation each.
"""

from __future__ import annotations

from typing import Any

from services.planner.rules import places
from services.planner.rules.cursor import Cursor, NoParse, Number, Plan, first
from services.planner.rules.readers import along, amount, axis, direction, targets, to_the
from services.planner.rules.words import (
    AS_BIG,
    BIGGER,
    SIZE_FACTORS,
    SMALLER,
)

# "make Box bigger|smaller", with "a bit" or without: the factor each scales by.
NUDGE: dict[tuple[bool, bool], float] = {
    (True, False): 1.5,
    (False, False): 0.75,
    (True, True): 1.25,
    (False, True): 0.9,
}


# "make Box wider|taller|...": the axes each word scales (by the factor of NUDGE).
STRETCH: dict[str, tuple[bool, bool, bool]] = {
    "wider": (True, True, False),
    "narrower": (True, True, False),
    "thinner": (True, True, False),
    "longer": (True, False, False),
    "taller": (False, False, True),
    "shorter": (False, False, True),
}


# "spin Ring a quarter turn": degrees for each turn said.
TURNS: dict[tuple[str, ...], int] = {
    ("a", "quarter", "turn"): 90,
    ("a", "quarter"): 90,
    ("half", "a", "turn"): 180,
    ("a", "half", "turn"): 180,
    ("a", "full", "turn"): 360,
    ("a", "turn"): 360,
}


def _each(names: list[str], value: dict[str, Any], relative: bool) -> list[Plan]:
    extra = {"mode": "relative"} if relative else {}
    return [("object.transform", {"name": n, **value, **extra}) for n in names]


def _along(cur: Cursor) -> list[Number]:
    """``[by] <n> [units] along|on|in [the] x|y|z [axis]`` or ``along x by <n>``."""
    if cur.word("along", "on", "in"):
        index = axis(cur)
        cur.word("by")
        return along(amount(cur), index)
    cur.word("by")
    value = amount(cur)
    cur.expect("along", "on", "in")
    return along(value, axis(cur))


def move(cur: Cursor) -> list[Plan]:
    """move <objects> to <vec>|by <vec>|<direction> <n>|<n> along <axis>"""
    names = targets(cur)
    start = cur.pos
    to_the(cur)
    if cur.pos == start and cur.word("to"):
        location = cur.location()
        cur.end()
        return _each(names, {"location": location}, False)
    if cur.word("by") and (vector := _try(cur, cur.vector)) is not None:
        cur.end()
        return _each(names, {"location": vector}, True)
    cur.pos = start
    offset = direction(cur)
    if offset is None:
        cur.pos = start
        offset = _along(cur)
    cur.end()
    return _each(names, {"location": offset}, True)


def move_to_place(cur: Cursor) -> list[Plan]:
    """move|put|place <objects> on [top of]|onto|above|next to|beside <Name>: each where a
    new object of its size would go (rules_sizes), absolute."""
    names = targets(cur)
    if not all(cur.stage.exists(name) for name in names):
        raise NoParse()  # "put a cone on Box" makes one: only objects the scene has move
    cur.word("to")  # "move the lamp to above the table"
    if cur.word("around"):
        target = cur.name()
        cur.end()
        if target in names:
            raise NoParse(f'"{target}" cannot go around itself.')
        halves = [places.half_of(cur.stage, name) or [1.0, 1.0, 1.0] for name in names]
        spots = places.circle(cur, target, halves)
        pairs = zip(names, spots, strict=True)
        return [
            ("object.transform", {"name": n, "location": places.origin_for(cur.stage, n, at)})
            for n, at in pairs
        ]
    if not places.place_ahead(cur):
        raise NoParse()
    where = places.read_place(cur)
    cur.end()
    plans: list[Plan] = []
    for name in names:
        if name == where[1]:
            raise NoParse(f'"{name}" cannot be placed by itself.')
        mine = places.half_of(cur.stage, name)
        if mine is None:
            raise NoParse(f'I do not know how big "{name}" is, so I cannot place it.')
        spot = places.place(cur, where, mine)
        plans.append(
            (
                "object.transform",
                {"name": name, "location": places.origin_for(cur.stage, name, spot)},
            )
        )
    return plans


def _try(cur: Cursor, read: Any) -> Any:
    start = cur.pos
    try:
        value = read()
        cur.end()
    except NoParse:
        cur.pos = start
        return None
    return value


def lift(sign: int) -> Any:
    """raise|lift <objects> [by] <n> [units]  /  lower|drop <objects> [by] <n> [units]"""

    def form(cur: Cursor) -> list[Plan]:
        names = targets(cur)
        cur.word("up", "down")
        cur.word("by")
        value = amount(cur)
        cur.end()
        return _each(names, {"location": along(value * sign, 2)}, True)

    return form


def _rotate_to(cur: Cursor) -> list[Plan]:
    names = targets(cur)
    relative = cur.word("by") is not None
    if not relative:
        cur.word("to")
    rotation = cur.vector()
    cur.degrees()
    cur.end()
    return _each(names, {"rotation": rotation}, relative)


def _rotate_axis(cur: Cursor) -> list[Plan]:
    names = targets(cur)
    cur.word("by")
    turn = cur.phrase(TURNS)
    angle = turn if turn is not None else cur.number()
    cur.degrees()
    if cur.at_end():
        index = 2  # "rotate Chair 90 degrees": turned as seen from above
    else:
        cur.expect("around", "about", "on", "along", "in")
        index = axis(cur)
    cur.end()
    return _each(names, {"rotation": along(angle, index)}, True)


def rotate(cur: Cursor) -> Any:
    """rotate|turn|spin <objects> [to|by] <vec> [degrees] | [by] <n> [degrees] around <axis>"""
    return first(cur, _rotate_axis, _rotate_to)


def _factor(cur: Cursor) -> float | int:
    """``<n>%``, ``half``, ``twice``: a scale factor."""
    token = cur.peek()
    if token is not None and token.lower in SIZE_FACTORS:
        cur.pos += 1
        return SIZE_FACTORS[token.lower]
    value = cur.number()
    if (token := cur.peek()) is not None and token.kind == "PERCENT":
        cur.pos += 1
        return round(value / 100, 6)
    return value


def _scale_to(cur: Cursor) -> list[Plan]:
    names = targets(cur)
    relative = cur.word("by") is not None
    if not relative:
        cur.word("to")
    scale = cur.number_or_vector()
    cur.end()
    return _each(names, {"scale": scale}, relative)


def _scale_factor(cur: Cursor) -> list[Plan]:
    names = targets(cur)
    down = cur.word("up", "down") == "down"
    if cur.at_end():  # "scale it up": as "make it bigger"
        return _each(names, {"scale": [NUDGE[(not down, False)]] * 3}, True)
    cur.expect("by")
    factor = _factor(cur)
    if factor <= 0:
        raise NoParse("A size must stay above zero.")
    factor = round(1 / factor, 6) if down else factor
    cur.end()
    return _each(names, {"scale": [factor] * 3}, True)


def _scale_axis(cur: Cursor) -> list[Plan]:
    """scale <objects> [by] <n> along|on|in [the] x|y|z [axis]: that axis only, relative."""
    names = targets(cur)
    cur.word("by")
    factor = _factor(cur)
    if factor <= 0:
        raise NoParse("A size must stay above zero.")
    cur.expect("along", "on", "in")
    index = axis(cur)
    cur.end()
    return _each(names, {"scale": [factor if i == index else 1 for i in range(3)]}, True)


def scale(cur: Cursor) -> Any:
    """scale <objects> [to|by] <n>|<vec> | by half|<n>% | by <n> along <axis>"""
    return first(cur, _scale_to, _scale_factor, _scale_axis)


def _as_big(cur: Cursor) -> None:
    """``as big|large|tall [as before]`` or ``bigger``."""
    if cur.word("as"):
        cur.expect(*AS_BIG)
        if cur.word("as"):
            cur.expect("before", "now", "it", "is")
            cur.word("is")
    else:
        cur.expect(*BIGGER)


def _size_factor(cur: Cursor) -> float | int | list[float]:
    a_bit = cur.word("a") is not None
    if a_bit:
        cur.expect("bit", "little")
    elif cur.word("slightly"):
        a_bit = True
    if (change := cur.word("bigger", "larger", "smaller")) is not None:
        return NUDGE[(change != "smaller", a_bit)]
    if (change := cur.word(*STRETCH)) is not None:
        factor = NUDGE[(change in ("wider", "taller", "longer"), a_bit)]
        return [factor if axis else 1.0 for axis in STRETCH[change]]
    if a_bit:
        raise NoParse()
    word = cur.word(*SIZE_FACTORS)
    if word is not None:
        if cur.word("the", "its"):
            cur.expect("size")
        else:
            _as_big(cur)
        return SIZE_FACTORS[word]
    value = cur.number()
    if (token := cur.peek()) is not None and token.kind == "PERCENT":
        cur.pos += 1
        change = cur.expect(*BIGGER, *SMALLER)
        factor = round(1 + (value if change in BIGGER else -value) / 100, 6)
    else:
        cur.expect("times", "x")
        if cur.word(*SMALLER):
            factor = round(1 / value, 6) if value else 0
        else:
            _as_big(cur)
            factor = value
    if factor <= 0:
        raise NoParse("A size must stay above zero.")
    return factor


def size(cur: Cursor) -> list[Plan]:
    """make <objects> twice|half as big | double the size | <n> times bigger|smaller
    | <n>% bigger|smaller"""
    names = targets(cur)
    factor = _size_factor(cur)
    cur.end()
    return _each(names, {"scale": factor if isinstance(factor, list) else [factor] * 3}, True)


def double(factor: float) -> Any:
    """double|triple|halve [the size of] <objects> [in size]"""

    def form(cur: Cursor) -> list[Plan]:
        if cur.word("the"):
            cur.expect("size", "scale")
            cur.expect("of")
        names = targets(cur)
        if cur.word("in"):
            cur.expect("size", "scale")
        cur.end()
        return _each(names, {"scale": [factor] * 3}, True)

    return form
