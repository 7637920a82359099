"""Things by their everyday names, their sizes, and where they go next to others.

"a floor 10 meters wide", "a post with radius 0.1 and height 2", "a lamp on top of the
table": a noun stands for a primitive and names the object after itself (``Floor``,
``Post.001``); a size becomes the ``scale`` that gives the primitive those dimensions; a
place is worked out from the target's bounds. The scene summary has no dimensions, so
bounds come from the primitive's own size times the object's scale (a mesh whose shape is
unknown counts as a default cube, 2 units across; a light or camera as nothing).
"""

from __future__ import annotations

import math
from typing import Any

from services.planner.backends.rules_cursor import Cursor, NoParse, Number
from services.planner.backends.rules_scene import Stage, base_name
from services.planner.backends.rules_vocab import MODIFIERS, PRIMITIVES
from services.planner.backends.rules_words import DEFAULT_NAMES, PLURALS, UNIT_WORDS

# Everyday nouns people block a scene out with: the primitive each stands for.
NOUNS: dict[str, str] = {
    "box": "cube",
    "ball": "uv_sphere",
    "floor": "plane",
    "ground": "plane",
    "wall": "cube",
    "table": "cube",
    "desk": "cube",
    "chair": "cube",
    "stool": "cube",
    "bench": "cube",
    "shelf": "cube",
    "crate": "cube",
    "block": "cube",
    "step": "cube",
    "post": "cylinder",
    "pillar": "cylinder",
    "column": "cylinder",
    "pole": "cylinder",
    "leg": "cylinder",
    "pipe": "cylinder",
    "rock": "ico_sphere",
    "stone": "ico_sphere",
    "tree": "cone",
}
IRREGULAR = {"shelves": "shelf"}
# Words before a shape that say how it looks or how big, not what it is: refused there.
NOT_NAMES = frozenset(
    {"big", "small", "large", "tiny", "huge", "little", "tall", "short", "long", "wide"}
    | {"thin", "thick", "narrow", "named", "called", "of", "with", "at", "and"}
)

# Half of each primitive's size along x, y, z at scale 1 (Blender's defaults).
HALF: dict[str, tuple[float, float, float]] = {
    "cube": (1, 1, 1),
    "uv_sphere": (1, 1, 1),
    "ico_sphere": (1, 1, 1),
    "cylinder": (1, 1, 1),
    "cone": (1, 1, 1),
    "plane": (1, 1, 0),
    "torus": (1.25, 1.25, 0.25),
    "monkey": (1, 1, 1),
}
ROUND = ("cylinder", "cone")  # radius sets x and y
BALL = ("uv_sphere", "ico_sphere")  # any one size sets all three
GAP = 1.0  # between an object "above" another and it, and beside one "next to" it
SIZELESS = 1.0  # half the height a light or camera counts as when placed

# "<n> [m] wide": the axis each size word sets.
EXTENT_WORDS: dict[str, int] = {
    "wide": 0,
    "long": 0,
    "across": 0,
    "deep": 1,
    "thick": 1,
    "tall": 2,
    "high": 2,
}
# "with radius <n>": what each dimension word measures.
DIMENSION_WORDS = frozenset(
    {"radius", "diameter", "height", "width", "depth", "length", "size", "thickness"}
)


# What things are made of, which no tool sets: refused before a shape, not taken as a name.
MATERIALS = frozenset(
    {"wooden", "wood", "glass", "plastic", "concrete", "brick", "marble", "leather", "fabric"}
    | {"steel", "iron", "golden", "stone-like", "rubber", "ceramic", "velvet"}
)
# Words other "add" forms start with: no hint about shapes for them.
OTHER_ADDS = frozenset(
    {w for key in MODIFIERS for w in key}
    | {"camera", "light", "lamp", "sun", "spotlight", "point", "spot", "area", "collection"}
    | {"keyframe", "key", "material", "modifier", "warm", "cool", "cold", "new", "array"}
    | {"row", "line", "subdivision", "geometry"}
)


def noun(cur: Cursor, plural: bool) -> tuple[str, str] | None:
    """An everyday noun if one is next (consumed): its primitive and the name it gives."""
    token = cur.peek()
    if token is None:
        return None
    word = singular(token.lower) if plural else token.lower
    if word is None or word not in NOUNS:
        return None
    cur.pos += 1
    return NOUNS[word], word.capitalize()


def thing(cur: Cursor, plural: bool) -> tuple[str, str]:
    """What a create makes: a shape word or a noun, maybe after another word ("a ground
    plane", "lamp posts"): the primitive and the name it gives (the first word's when that
    is a noun, else the second's)."""
    token = cur.peek()
    start, reached = cur.pos, cur.reached
    if token is not None and token.lower in MATERIALS:
        raise NoParse(
            f'"{token.text}" is a material no tool makes (materials take a color, metallic and '
            "roughness): say a color instead, e.g. a brown table."
        )
    shape = _shape(cur, plural)
    if shape is not None and (shape[1] == DEFAULT_NAMES[shape[0]] or cur.pos > start + 1):
        return shape  # a shape word: "cube", "ico sphere"
    if token is not None and token.kind == "WORD" and token.lower not in NOT_NAMES:
        cur.pos, cur.reached = start + 1, reached
        second = _shape(cur, plural)
        if second is not None:  # "ground plane": Ground; "lamp posts": Post, Post.001
            return second[0], shape[1] if shape is not None else second[1]
    cur.pos, cur.reached = start, reached
    shape = _shape(cur, plural)
    if shape is not None:
        return shape
    if token is not None and token.kind == "WORD" and token.lower not in NOT_NAMES | OTHER_ADDS:
        raise NoParse(
            f'I know no shape called "{token.text}": say the shape and name it after the '
            f"thing (add a cube named {token.text.capitalize()}); shapes: cube, sphere, "
            "cylinder, cone, plane, torus, monkey, and floor, wall, table, post, ..."
        )
    raise NoParse()


def _shape(cur: Cursor, plural: bool) -> tuple[str, str] | None:
    primitive = cur.phrase(PLURALS) or cur.phrase(PRIMITIVES)
    if primitive is not None:
        return primitive, DEFAULT_NAMES[primitive]
    return noun(cur, plural)


def singular(word: str) -> str | None:
    """``posts`` -> ``post``, ``benches`` -> ``bench``; None if not a plural."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith(("xes", "ches", "shes", "sses")):
        return word[:-2]  # boxes, benches
    return word[:-1] if len(word) > 2 and word.endswith("s") else None


def size_ahead(cur: Cursor, ahead: int = 0) -> bool:
    """Whether a size phrase starts ``ahead`` tokens on (so "and" does not end the item)."""
    token = cur.peek(ahead)
    if token is None:
        return False
    if token.lower in ("a", "an", "with"):
        return size_ahead(cur, ahead + 1)
    if token.lower in DIMENSION_WORDS:
        return True
    if token.kind != "NUMBER":
        return False
    following = cur.peek(ahead + 1)
    if following is not None and following.lower in UNIT_WORDS:
        following = cur.peek(ahead + 2)
    return following is not None and (following.lower in EXTENT_WORDS or following.lower == "by")


def read_size(cur: Cursor, sizes: dict[str, Number]) -> None:
    """One size: ``<n> [m] wide|tall|...``, ``<n> by <n> [by <n>]``, ``[with] [a] radius
    [of] <n> [m]``; recorded in ``sizes`` (x, y, z, radius, size), each at most once."""
    cur.word("with")
    cur.word("a", "an")
    if (word := cur.word(*DIMENSION_WORDS)) is not None:
        cur.word("of")
        value = _length(cur)
        key = {"width": "x", "length": "x", "depth": "y", "thickness": "y", "height": "z"}
        if word == "diameter":
            _once(sizes, "radius", value / 2, word)
        else:
            _once(sizes, key.get(word, word), value, word)
        return
    value = _length(cur)
    if cur.word("by"):
        _once(sizes, "x", value, "by")
        _once(sizes, "y", _length(cur), "by")
        if cur.word("by"):
            _once(sizes, "z", _length(cur), "by")
        return
    word = cur.expect(*EXTENT_WORDS)
    axis = EXTENT_WORDS[word]
    if axis == 0 and "x" in sizes:
        axis = 1  # "10 m long and 2 m wide": the second across is the depth
    _once(sizes, "xyz"[axis], value, word)


def _length(cur: Cursor) -> Number:
    value = cur.number()
    cur.word(*UNIT_WORDS)
    if value <= 0:
        raise NoParse("A size must be above zero.")
    return value


def _once(sizes: dict[str, Number], key: str, value: Number, word: str) -> None:
    if key in sizes:
        raise NoParse(f'"{word}" gives a size that was given already.')
    sizes[key] = value


def scale_for(primitive: str, sizes: dict[str, Number]) -> list[Number]:
    """The scale that gives ``primitive`` the ``sizes`` asked for (others stay default)."""
    half = HALF[primitive]
    if "size" in sizes:
        return [_r(sizes["size"] / 2)] * 3
    if primitive in BALL:
        given = sizes.get("radius") or next((sizes[k] / 2 for k in "xyz" if k in sizes), 1)
        return [_r(given)] * 3
    scale: list[Number] = [1, 1, 1]
    if "radius" in sizes:
        if primitive not in ROUND:
            raise NoParse(f"A {primitive.replace('_', ' ')} has no radius; give its width.")
        scale[0] = scale[1] = _r(sizes["radius"])
    for index, key in enumerate("xyz"):
        if key in sizes:
            if half[index] == 0:
                raise NoParse(f"A {primitive} is flat: it has no {key} size.")
            scale[index] = _r(sizes[key] / (2 * half[index]))
    if primitive in ("plane", *ROUND) and "x" in sizes and "y" not in sizes:
        scale[1] = scale[0]  # "a floor 10 m wide" is square, "a post 0.5 m wide" round
    return scale


def _r(value: float) -> Number:
    rounded = round(value, 4)
    return int(rounded) if rounded == int(rounded) else rounded


# -- places ---------------------------------------------------------------------------
def half_of(stage: Stage, name: str) -> list[float] | None:
    """Half of the object's size along x, y, z, from its primitive and scale."""
    thing = stage.things.get(name)
    if thing is None:
        return None
    if thing.type != "MESH":
        return [0.0, 0.0, SIZELESS]
    shape = thing.primitive or shape_of(name)
    half = HALF.get(shape or "cube", HALF["cube"])
    return [abs(h * s) for h, s in zip(half, thing.scale, strict=True)]


def shape_of(name: str) -> str | None:
    """The primitive a name says the object was made as: ``Cube.001``, ``Post``."""
    base = base_name(name)
    for primitive, default in DEFAULT_NAMES.items():
        if default.lower() == base:
            return primitive
    return NOUNS.get(base)


def own_half(primitive: str | None, scale: list[Number] | None) -> list[float]:
    """Half the size of a thing about to be made (``None``: a light or camera)."""
    if primitive is None:
        return [0.0, 0.0, SIZELESS]
    factors = scale or [1, 1, 1]
    return [h * s for h, s in zip(HALF[primitive], factors, strict=True)]


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
    if first in ("behind", "under", "below"):
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
        gap = float(cur.number())
        cur.word(*UNIT_WORDS)
        if gap < 0:
            raise NoParse("A distance must not be negative.")
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
    gap = GAP if said is None else said
    sized = bool(mine[0] or mine[1])
    lift = mine[2] if sized else (SIZELESS if said is None else 0.0)
    centre, half = cur.stage.location(name), half_of(cur.stage, name)
    if centre is None or half is None:
        raise NoParse(f'I do not know where "{name}" is, so I cannot place something by it.')
    top = centre[2] + half[2]
    if relation == "on":
        return [centre[0], centre[1], _r(top + mine[2])]
    if relation == "above":
        return [
            centre[0],
            centre[1],
            _r(top + gap + (max(lift, SIZELESS) if said is None else lift)),
        ]
    if relation == "below":
        return [centre[0], centre[1], _r(centre[2] - half[2] - gap - lift)]
    index, sign = SIDES[relation]
    spot: list[Number] = [centre[0], centre[1], _r(centre[2] - half[2] + mine[2])]
    spot[index] = _r(centre[index] + sign * (half[index] + gap + mine[index]))
    return spot


def ring(cur: Cursor, seen: dict[str, Any], primitive: str, n: int) -> list[list[Number]]:
    """``<n> <things> around <Name>``: a circle of locations, the first on the +x side, going
    counter-clockwise seen from above, 1 unit clear of the object, on the same ground."""
    if seen.get("place", ("", ""))[0] != "around":
        return []
    name = seen.pop("place")[1]
    if "location" in seen or "axis" in seen or "spacing" in seen:
        raise NoParse('"around" says where they go: leave out at, along and spacing.')
    centre, half = cur.stage.location(name), half_of(cur.stage, name)
    if centre is None or half is None:
        raise NoParse(f'I do not know where "{name}" is, so I cannot place things around it.')
    mine = own_half(primitive, seen.get("scale"))
    radius = max(half[0], half[1]) + GAP + max(mine[0], mine[1])
    z = _r(centre[2] - half[2] + mine[2])
    return [
        [
            _r(centre[0] + radius * math.cos(2 * math.pi * i / n)),
            _r(centre[1] + radius * math.sin(2 * math.pi * i / n)),
            z,
        ]
        for i in range(n)
    ]


def placed(cur: Cursor, seen: dict[str, Any], primitive: str | None) -> None:
    """Turn a place said in ``seen`` into its location, now the thing's size is known."""
    if "place" in seen:
        seen["location"] = place(cur, seen.pop("place"), own_half(primitive, seen.get("scale")))
