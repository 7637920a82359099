"""How much geometry one object and one scene may make once Blender evaluates them.

The caps in ``caps.py`` bound one property each. What they cannot bound is a product
(three ARRAYs at their cap of 1000 make 10^9 copies), a property whose effect depends on
others (an ARRAY's ``fit_length`` over a small offset) or a Geometry Nodes tree; the
budget bounds the result instead: the vertices an object and the scene would have, and
the copies and instances they would make. Over it, a tool call fails with
``invalid_input`` (ARGS_INVALID), naming what made the geometry, the estimate and the
limit.

The bridge reads the limits from its environment when it starts, as the Python sandbox
reads ``BLENDMESH_BWRAP``. Pure: no ``bpy``, so the limits can be read and tested anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from contracts.errors import BlendmeshError

# field -> (environment variable, what it counts, per what)
LIMITS: dict[str, tuple[str, str, str]] = {
    "object_vertices": ("BLENDMESH_MAX_OBJECT_VERTICES", "vertices", "an object"),
    "scene_vertices": ("BLENDMESH_MAX_SCENE_VERTICES", "vertices", "the scene"),
    "object_copies": ("BLENDMESH_MAX_OBJECT_COPIES", "copies and instances", "an object"),
    "scene_copies": ("BLENDMESH_MAX_SCENE_COPIES", "copies and instances", "the scene"),
}


class BudgetSettingError(BlendmeshError, ValueError):
    """A budget variable holds a value the bridge cannot use; the message names it and the fix."""


@dataclass(frozen=True)
class GeometryBudget:
    """The most one object and the whole scene may make, counted after every modifier.

    Copies are what ARRAYs make and instances what instancing makes (Geometry Nodes,
    collection instances, particles); an object counts as one. The defaults leave room for
    dense scenes (the ``polygon_budget`` gate asks for at most 1,000,000 faces by default)
    while keeping the bridge's memory in the low gigabytes.
    """

    object_vertices: int = 2_000_000
    scene_vertices: int = 8_000_000
    object_copies: int = 50_000
    scene_copies: int = 250_000

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GeometryBudget:
        """The limits the environment sets, the defaults for the others."""
        values = {
            f.name: _limit(env, LIMITS[f.name][0], getattr(cls(), f.name)) for f in fields(cls)
        }
        return cls(**values)

    def refusal(self, limit: str, found: int, whose: str, because: str) -> str:
        """Why ``found`` is over the ``limit`` field: the estimate, the limit, the setting."""
        variable, counted, per = LIMITS[limit]
        return (
            f"{whose} would have {found:,} {counted}, over the {getattr(self, limit):,} "
            f"{per} may have ({variable}){because}"
        )


def _limit(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BudgetSettingError(f"{name}={raw!r} is not a whole number") from None
    if value < 1:
        raise BudgetSettingError(f"{name}={raw!r} must be at least 1")
    return value
