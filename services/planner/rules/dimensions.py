"""Sizes of objects the scene has: "make the table 2 meters wide", "make it 3 m tall".

The sizes read as in a create (rules_sizes) and become an absolute ``scale`` (no tool
rebuilds an existing mesh): the axes said get the scale that gives the object those
dimensions in the world, from its measured bounds when the summary has them (else from
its primitive's default size), the others keep the scale the scene summary shows, so the
object is resized only where the person said.
"""

from __future__ import annotations

from services.planner.rules.cursor import Cursor, NoParse, Number, Plan
from services.planner.rules.places import half_of, shape_of
from services.planner.rules.readers import targets
from services.planner.rules.sizes import (
    BALL,
    ROUND,
    dimensions_for,
    read_size,
    rounded,
    scale_for,
    size_ahead,
)


def _axes(primitive: str, sizes: dict[str, Number]) -> list[bool]:
    """Which axes the sizes said set (as ``scale_for`` reads them)."""
    if "size" in sizes or primitive in BALL:
        return [True, True, True]
    said = [k in sizes for k in "xyz"]
    if "radius" in sizes:
        said[0] = said[1] = True
    if primitive in ("plane", *ROUND) and said[0] and "y" not in sizes:
        said[1] = True
    return said


def make_size(cur: Cursor) -> list[Plan]:
    """make <objects> <d> [m] wide|tall|deep ... [and <more sizes>]: absolute scales."""
    names = targets(cur)
    if not size_ahead(cur):
        raise NoParse()
    sizes: dict[str, Number] = {}
    read_size(cur, sizes)
    while cur.word("and") or ((tok := cur.peek()) is not None and tok.kind == "COMMA"):
        if (tok := cur.peek()) is not None and tok.kind == "COMMA":
            cur.pos += 1
            cur.word("and")
        read_size(cur, sizes)
    cur.end()
    plans: list[Plan] = []
    for name in names:
        thing = cur.stage.things.get(name)
        if thing is None or thing.type != "MESH":
            raise NoParse(f'I do not know the shape of "{name}", so I cannot size it.')
        primitive = thing.primitive or shape_of(name) or "cube"
        wanted = scale_for(primitive, sizes)
        if thing.half is not None:  # measured: what scale gives the world size asked for
            now, size = half_of(cur.stage, name) or [], dimensions_for(primitive, sizes)
            wanted = [
                rounded(s * d / (2 * h)) if h else s
                for s, d, h in zip(thing.scale, size, now, strict=True)
            ]
        said = _axes(primitive, sizes)
        scale = [w if s else c for w, s, c in zip(wanted, said, thing.scale, strict=True)]
        plans.append(("object.transform", {"name": name, "scale": scale}))
    return plans
