"""keyframe.insert: key an object's location, rotation or scale at a frame.

After keying, the keyed property shows its animated value at the scene's current frame,
as Blender shows it once it evaluates the scene. Without that, the first evaluation
(an inspection, a render) would move the object and change the scene hash.
"""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools import keyframes as body
from blendmesh_addon.tools.keyframes import PATHS

from ..registry import Outcome, Touches, name_schema, outcome, tool, vec3
from .answers import COUNT, STRING, answer
from .placing import LOCATION_LIMIT

MAX_FRAME = 1048574  # Blender's last frame
# The keyframes now on each keyed channel of the property, by array index ("0" is x).
KEYED = answer(
    {
        "name": STRING,
        "property": {"enum": sorted(PATHS)},
        "frame": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME},
        "keyframes": {
            "type": "object",
            "propertyNames": {"enum": ["0", "1", "2"]},
            "additionalProperties": {**COUNT, "minimum": 1},
        },
    }
)


@tool(
    name="keyframe.insert",
    touches=Touches(("name",)),
    description=(
        "Insert (or replace) a keyframe of an object's location, rotation or scale at a frame. "
        "With value, the property is set to it first (rotation in degrees); without, its "
        "current value is keyed. Afterwards the object shows its pose at the current frame."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "property", "frame"],
        "properties": {
            "name": name_schema("Object name."),
            "property": {"enum": sorted(PATHS)},
            "frame": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME},
            "value": vec3(
                "Value to key: location in scene units (|v| <= 1e6), rotation in degrees "
                "(|v| <= 1e5), scale factors (|v| <= 1e4).",
                LOCATION_LIMIT,
            ),
        },
    },
    output_schema=KEYED,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def insert(args: dict[str, Any]) -> Outcome:
    """Check the value and the rotation mode, set, key, then show the current frame's pose."""
    return outcome(body.insert(args))
