"""Where things go by others: on top of, above, next to, in front of, around.

An object's bounds are its world bounds as the scene summary measured them (any mesh,
imported or made, its parents, rotation and modifiers counted), followed through the plan
as it scales or moves it; an object this plan makes has the dimensions it is built at
times its scale. Only where a summary predates bounds do they come from the primitive's
default size (rules_sizes.HALF) times its scale: the primitive the plan made it as, or the
one its name says (``Cube.001``, ``Table``), a mesh of unknown shape counting as a default
cube. A light or camera counts as 2 units tall.
"""

from __future__ import annotations

import math
from typing import Any

from blendmesh_addon.tools.defaults import DEFAULT_NAMES
from services.planner.rules.cursor import Cursor, NoParse, Number
from services.planner.rules.scene import Stage, base_name
from services.planner.rules.sizes import HALF, NOUNS, rounded
from services.planner.rules.words import UNIT_WORDS

MIDDLE = ("middle", "center", "centre")
CENTRED = ("centred", "centered")
GAP = 1.0  # between an object "above" another and it, and beside one "next to" it
SIZELESS = 1.0  # half the height a light or camera counts as when placed


def half_of(stage: Stage, name: str) -> list[float] | None:
    """Half of the object's size along x, y, z in the world: measured, or from its
    primitive and scale."""
    thing = stage.things.get(name)
    if thing is None:
        return None
    if thing.type != "MESH":
        return [0.0, 0.0, SIZELESS]
    if thing.half is not None:
        return [
            abs(h * s / m) if m else h
            for h, s, m in zip(thing.half, thing.scale, thing.half_scale, strict=True)
        ]
    shape = thing.primitive or shape_of(name)
    half = HALF.get(shape or "cube", HALF["cube"])
    return [abs(h * s) for h, s in zip(half, thing.scale, strict=True)]


def origin_for(stage: Stage, name: str, spot: list[Number]) -> list[Number]:
    """The location that puts the middle of ``name``'s bounds at ``spot``: an imported
    mesh's origin may sit at its base or off to a side, a child's is in its parent's space."""
    thing = stage.things.get(name)
    if thing is None or not any(thing.centre):
        return spot
    return [rounded(s - c) for s, c in zip(spot, thing.centre, strict=True)]


def shape_of(name: str) -> str | None:
    """The primitive a name says the object was made as: ``Cube.001``, ``Post``."""
    base = base_name(name)
    for primitive, default in DEFAULT_NAMES.items():
        if default.lower() == base:
            return primitive
    return NOUNS.get(base)


def own_half(
    primitive: str | None, scale: list[Number] | None, dimensions: list[Number] | None = None
) -> list[float]:
    """Half the size of a thing about to be made (``None``: a light or camera)."""
    if primitive is None:
        return [0.0, 0.0, SIZELESS]
    factors = scale or [1, 1, 1]
    built = [d / 2 for d in dimensions] if dimensions is not None else HALF[primitive]
    return [h * s for h, s in zip(built, factors, strict=True)]


def _half(seen: dict[str, Any], primitive: str | None) -> list[float]:
    return own_half(primitive, seen.get("scale"), seen.get("dimensions"))


# Sides a thing goes "next to" another on: the axis and its sign (Blender's front view).
SIDES: dict[str, tuple[int, int]] = {
    "next": (0, 1),
    "right": (0, 1),
    "left": (0, -1),
    "front": (1, -1),
    "behind": (1, 1),
}


def place_ahead(cur: Cursor) -> bool:
    """Whether a place is next: ``on``, ``above``, ``next to``, ``in front of``, ``behind``,
    ``to the left of``, ``around``, ``<d> [m] above``."""
    words = [t.lower if (t := cur.peek(i)) is not None else "" for i in range(4)]
    first = words[0]
    if first in ("above", "over", "on", "onto", "next", "beside", "besides", "around"):
        return True
    if first in CENTRED and words[1] in ("on", "over", "above"):
        return True
    if first in ("behind", "under", "below"):
        return True
    if first == "in" and words[1] == "the" and words[2] in MIDDLE:
        return True
    if first == "in" and words[1] == "front":
        return True
    if first == "to" and words[1] == "the" and words[2] in ("left", "right"):
        return True
    if first in ("left", "right") and words[1] == "of":
        return True
    token = cur.peek()
    if token is not None and token.kind == "NUMBER":
        at = 2 if words[1] in UNIT_WORDS else 1
        start, reached = cur.pos, cur.reached
        cur.pos, cur.reached = start + at, reached  # "2 m in front of": the place after it
        following = cur.peek()
        ahead = following is not None and following.kind == "WORD" and place_ahead(cur)
        cur.pos, cur.reached = start, reached
        return ahead
    return False


def read_place(cur: Cursor) -> tuple[str, str, float | None]:
    """``on [top of]|onto|above|over|next to|beside|around|in front of|behind|to the left|
    right of <Name>`` or ``<d> [m] above|below <Name>``: the relation, name and the
    distance said, if one was."""
    gap: float | None = None
    if (token := cur.peek()) is not None and token.kind == "NUMBER":
        gap = float(cur.length())
        if gap < 0:
            raise NoParse("A distance must not be negative.")
    cur.word(*CENTRED)  # "centred on the table": on it, as "on" always centres
    ahead = [t.lower if (t := cur.peek(i)) is not None else "" for i in range(2)]
    if ahead[0] == "on" and ahead[1] in ("each", "either", "both"):
        cur.pos += 2
        cur.expect("side", "sides")
        cur.expect("of")
        return "sides", cur.name(), gap
    if cur.word("on", "onto"):
        if cur.word("top"):
            cur.expect("of")
        relation = "on"
    elif cur.word("next", "beside", "besides"):
        cur.word("to")
        relation = "next"
    elif cur.word("around"):
        relation = "around"
    elif cur.word("in"):
        if cur.word("the"):
            cur.expect(*MIDDLE)
            if not cur.word("of"):
                return "middle", "", gap
            return "on", cur.name(), gap  # "in the middle of the floor": on it, centred
        cur.expect("front")
        cur.expect("of")
        relation = "front"
    elif cur.word("behind"):
        relation = "behind"
    elif cur.word("to"):
        cur.expect("the")
        relation = cur.expect("left", "right")
        cur.expect("of")
    elif (side := cur.word("left", "right")) is not None:
        cur.expect("of")
        relation = side
    elif cur.word("under", "below"):
        relation = "below"
    else:
        cur.expect("above", "over")
        relation = "above"
    return relation, cur.name(), gap


def place(cur: Cursor, where: tuple[str, str, float | None], mine: list[float]) -> list[Number]:
    """Where a thing of half size ``mine`` goes by an object (see docs/grammar.md, Places).
    A distance said is from the object's surface to the thing's, or to a light's centre."""
    relation, name, said = where
    if relation == "middle":  # "in the middle": the scene's centre, on the ground
        return [0, 0, rounded(mine[2])]
    gap = GAP if said is None else said
    sized = bool(mine[0] or mine[1])
    lift = mine[2] if sized else (SIZELESS if said is None else 0.0)
    centre, half = cur.stage.middle(name), half_of(cur.stage, name)
    if centre is None or half is None:
        raise NoParse(f'I do not know where "{name}" is, so I cannot place something by it.')
    top = centre[2] + half[2]
    if relation == "on":
        return [centre[0], centre[1], rounded(top + mine[2])]
    if relation == "above":
        return [
            centre[0],
            centre[1],
            rounded(top + gap + (max(lift, SIZELESS) if said is None else lift)),
        ]
    if relation == "below":  # touching from below unless a distance is said: a rug under a table
        clear = 0.0 if said is None else said
        return [centre[0], centre[1], rounded(centre[2] - half[2] - clear - lift)]
    index, sign = SIDES[relation]
    spot: list[Number] = [centre[0], centre[1], rounded(centre[2] - half[2] + mine[2])]
    spot[index] = rounded(centre[index] + sign * (half[index] + gap + mine[index]))
    return spot


def ring(cur: Cursor, seen: dict[str, Any], primitive: str, n: int) -> list[list[Number]]:
    """``<n> <things> around <Name>``: a circle of locations (see ``circle``)."""
    if seen.get("place", ("", ""))[0] != "around":
        return []
    name = seen.pop("place")[1]
    if "location" in seen or "axis" in seen or "spacing" in seen:
        raise NoParse('"around" says where they go: leave out at, along and spacing.')
    return circle(cur, name, [_half(seen, primitive)] * n)


def sides(cur: Cursor, seen: dict[str, Any], primitive: str, n: int) -> list[list[Number]]:
    """``<thing> on each|either side of <Name>``: two locations, left then right of it
    (1 unit clear, or the distance said), on the same ground."""
    if seen.get("place", ("", ""))[0] != "sides":
        return []
    _, name, gap = seen.pop("place")
    if n not in (1, 2):
        raise NoParse(f'"on each side of {name}" puts two things, one each side: say 2 or one.')
    mine = _half(seen, primitive)
    return [place(cur, (side, name, gap), mine) for side in ("left", "right")]


def circle(cur: Cursor, name: str, halves: list[list[float]]) -> list[list[Number]]:
    """Where things of half sizes ``halves`` go around an object: a circle, the first on its
    +x side, going counter-clockwise seen from above, 1 unit clear, on the same ground."""
    centre, half = cur.stage.middle(name), half_of(cur.stage, name)
    if centre is None or half is None:
        raise NoParse(f'I do not know where "{name}" is, so I cannot place things around it.')
    n = len(halves)
    widest = max(max(mine[0], mine[1]) for mine in halves)
    radius = max(half[0], half[1]) + GAP + widest
    return [
        [
            rounded(centre[0] + radius * math.cos(2 * math.pi * i / n)),
            rounded(centre[1] + radius * math.sin(2 * math.pi * i / n)),
            rounded(centre[2] - half[2] + mine[2]),
        ]
        for i, mine in enumerate(halves)
    ]


def placed(cur: Cursor, seen: dict[str, Any], primitive: str | None) -> None:
    """Turn a place said in ``seen`` into its location, now the thing's size is known."""
    if "place" in seen:
        seen["location"] = place(cur, seen.pop("place"), _half(seen, primitive))
