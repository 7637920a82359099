"""Things by their everyday names and their sizes.

"a floor 10 meters wide", "a post with radius 0.1 and height 2": a noun stands for a
primitive and names the object after itself (``Floor``, ``Post.001``); a size becomes the
``dimensions`` the mesh is built at, its scale staying 1, as Blender's Add panel makes it,
so a bevel, an array's gap or a solidify then measure what they say. Where things go by
others is rules_places.py.
"""

from __future__ import annotations

import re

from blendmesh_addon.tools.defaults import DEFAULT_NAMES, DEFAULT_SIZES
from services.planner.rules.cursor import Cursor, NoParse, Number
from services.planner.rules.lexer import Token
from services.planner.rules.vocab import MODIFIERS, PRIMITIVES
from services.planner.rules.words import LENGTH_UNITS, PLURALS, UNIT_WORDS

# Everyday nouns people block a scene out with: the primitive each stands for.
NOUNS: dict[str, str] = {
    "floor": "plane",
    "ground": "plane",
    "rug": "plane",
    "carpet": "plane",
    "mat": "plane",
    "road": "plane",
    "path": "plane",
    "ceiling": "plane",
    "poster": "plane",
    "painting": "plane",
    "picture": "plane",
    "window": "plane",
    "box": "cube",
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
    "sofa": "cube",
    "couch": "cube",
    "bed": "cube",
    "cabinet": "cube",
    "cupboard": "cube",
    "dresser": "cube",
    "wardrobe": "cube",
    "counter": "cube",
    "bookshelf": "cube",
    "bookcase": "cube",
    "door": "cube",
    "house": "cube",
    "building": "cube",
    "car": "cube",
    "book": "cube",
    "fence": "cube",
    "fridge": "cube",
    "tv": "cube",
    "monitor": "cube",
    "brick": "cube",
    "post": "cylinder",
    "pillar": "cylinder",
    "column": "cylinder",
    "pole": "cylinder",
    "leg": "cylinder",
    "pipe": "cylinder",
    "vase": "cylinder",
    "cup": "cylinder",
    "mug": "cylinder",
    "can": "cylinder",
    "bottle": "cylinder",
    "barrel": "cylinder",
    "trunk": "cylinder",
    "candle": "cylinder",
    "tube": "cylinder",
    "bucket": "cylinder",
    "wheel": "cylinder",
    "ball": "uv_sphere",
    "orb": "uv_sphere",
    "globe": "uv_sphere",
    "planet": "uv_sphere",
    "bowl": "uv_sphere",
    "head": "uv_sphere",
    "rock": "ico_sphere",
    "stone": "ico_sphere",
    "boulder": "ico_sphere",
    "pebble": "ico_sphere",
    "bush": "ico_sphere",
    "tree": "cone",
    "roof": "cone",
    "spike": "cone",
    "lampshade": "cone",
    "plant": "cone",
    "ring": "torus",
    "donut": "torus",
    "tire": "torus",
    "tyre": "torus",
}
IRREGULAR = {"shelves": "shelf"}
# Words before a shape that say how it looks or how big, not what it is: refused there.
NOT_NAMES = frozenset(
    {"big", "small", "large", "tiny", "huge", "little", "tall", "short", "long", "wide"}
    | {"thin", "thick", "narrow", "named", "called", "of", "with", "at", "and"}
)

# Half of each primitive's size along x, y, z at scale 1, from the table the tools build by.
HALF: dict[str, tuple[float, float, float]] = {
    primitive: (x / 2, y / 2, z / 2) for primitive, (x, y, z) in DEFAULT_SIZES.items()
}
ROUND = ("cylinder", "cone")  # radius sets x and y
BALL = ("uv_sphere", "ico_sphere")  # any one size sets all three

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
        ahead += 1
        following = cur.peek(ahead + 1)
    if following is not None and following.lower == "in":  # "0.3 m in diameter"
        measure = cur.peek(ahead + 2)
        return measure is not None and measure.lower in DIMENSION_WORDS
    return following is not None and (
        following.lower in EXTENT_WORDS
        or following.lower in ("by", "x")
        or _glued(following) is not None
    )


def _glued(token: Token | None) -> float | None:
    """The second number of ``10x10`` (lexed as ``10`` and ``x10``), if ``token`` is one."""
    if token is None or token.kind != "WORD":
        return None
    match = re.fullmatch(r"x(\d+(?:\.\d+)?)", token.lower)
    return float(match.group(1)) if match else None


def _times(cur: Cursor) -> Number | None:
    """``by <d>``, ``x <d>`` or a glued ``x<d>``: the next dimension, if one follows."""
    glued = _glued(cur.peek())
    if glued is not None:
        cur.pos += 1
        unit = cur.word(*UNIT_WORDS)
        return rounded(glued * (LENGTH_UNITS[unit] if unit else 1))
    if cur.word("by", "x"):
        return _length(cur)
    return None


def size_before(cur: Cursor) -> dict[str, Number]:
    """Sizes said before the thing: "a 10 m wide floor", "a 10x10 floor", "a 2 m cube"
    (a number with a unit right before the thing is its size)."""
    found: dict[str, Number] = {}
    if size_ahead(cur):
        read_size(cur, found)
        return found
    token, unit, after = cur.peek(), cur.peek(1), cur.peek(2)
    if (
        token is not None
        and token.kind == "NUMBER"
        and unit is not None
        and unit.lower in UNIT_WORDS
        and after is not None
        and after.kind == "WORD"
        and after.lower not in EXTENT_WORDS
    ):
        found["size"] = _length(cur)
    return found


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
    if (second := _times(cur)) is not None:
        _once(sizes, "x", value, "by")
        _once(sizes, "y", second, "by")
        if (third := _times(cur)) is not None:
            _once(sizes, "z", third, "by")
        return
    if cur.word("in"):  # "0.3 m in diameter", "2 m in height"
        word = cur.expect(*DIMENSION_WORDS)
        key = {"width": "x", "length": "x", "depth": "y", "thickness": "y", "height": "z"}
        if word == "diameter":
            _once(sizes, "radius", value / 2, word)
        else:
            _once(sizes, key.get(word, word), value, word)
        return
    word = cur.expect(*EXTENT_WORDS)
    at = cur.pos - 1
    axis = EXTENT_WORDS[word]
    if axis == 0 and "x" in sizes:
        axis = 1  # "10 m long and 2 m wide": the second across is the depth
    if word in ("thick", "deep") and "y" in sizes and "z" not in sizes:
        axis = 2  # "1.8 m long, 0.5 m deep and 6 cm thick": a slab's thickness is its height
    _once(sizes, "xyz"[axis], value, word, at)


# The largest size a mesh is built at (object.create's dimensions take at most this).
MAX_SIZE = 10_000


def _length(cur: Cursor) -> Number:
    at = cur.pos
    value = cur.length()
    if value <= 0:
        raise NoParse("A size must be above zero.", at)
    if value > MAX_SIZE:
        raise NoParse(f"A size is at most {MAX_SIZE:,} m (10 km); scale a smaller one up.", at)
    return value


def _once(
    sizes: dict[str, Number], key: str, value: Number, word: str, at: int | None = None
) -> None:
    if key in sizes:
        raise NoParse(
            f'"{word}" gives a size that was given already: say each of wide, deep and tall '
            "once (2 m wide, 1 m deep and 0.5 m tall), or give all three: 2 x 1 x 0.5 m.",
            at,
        )
    sizes[key] = value


def scale_for(primitive: str, sizes: dict[str, Number]) -> list[Number]:
    """The scale that gives ``primitive`` the ``sizes`` asked for (others stay default)."""
    half = HALF[primitive]
    if "size" in sizes:
        return [rounded(sizes["size"] / 2)] * 3
    if primitive in BALL:
        given = sizes.get("radius") or next((sizes[k] / 2 for k in "xyz" if k in sizes), 1)
        return [rounded(given)] * 3
    scale: list[Number] = [1, 1, 1]
    if "radius" in sizes:
        if primitive not in ROUND:
            raise NoParse(f"A {primitive.replace('_', ' ')} has no radius; give its width.")
        scale[0] = scale[1] = rounded(sizes["radius"])
    for index, key in enumerate("xyz"):
        if key in sizes:
            if half[index] == 0:
                raise NoParse(f"A {primitive} is flat: it has no {key} size.")
            scale[index] = rounded(sizes[key] / (2 * half[index]))
    if primitive in ("plane", *ROUND) and "x" in sizes and "y" not in sizes:
        scale[1] = scale[0]  # "a floor 10 m wide" is square, "a post 0.5 m wide" round
    return scale


def dimensions_for(primitive: str, sizes: dict[str, Number]) -> list[Number]:
    """The size along x, y, z that a ``primitive`` is built at for the ``sizes`` asked
    for (others stay default; a plane's z is 0)."""
    scale = scale_for(primitive, sizes)
    return [rounded(2 * h * s) for h, s in zip(HALF[primitive], scale, strict=True)]


def rounded(value: float) -> Number:
    rounded = round(value, 4)
    return int(rounded) if rounded == int(rounded) else rounded
