"""Object relation tools: duplicate, parent, unparent.

Their bodies are in ``blendmesh_addon.tools.relations``, which the add-on also replays in
an artist's session; here they are registered with their schemas.
"""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools import relations as body

from ..registry import Outcome, Touches, name_schema, outcome, tool
from .answers import STRING, TRANSFORM, answer, nullable
from .placing import location_schema

PARENTED = answer({"name": STRING, "parent": nullable(STRING), **TRANSFORM})
# The copy's data is shared with the source when linked; an empty has none.
DUPLICATED = answer({"name": STRING, "source": STRING, "data": nullable(STRING), **TRANSFORM})


@tool(
    name="object.duplicate",
    touches=Touches(("name", "new_name", "data")),
    description=(
        "Copy an object (modifiers, materials, parent and collections come along). linked=false "
        "(default) copies its data too; linked=true shares it, so editing the geometry of one "
        "changes both. offset is added to the copy's location. new_name defaults to the first "
        "free '<name>.001', '<name>.002', ...; an existing new_name is a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": name_schema("Object to copy."),
            "new_name": name_schema("Name of the copy."),
            "linked": {"type": "boolean", "default": False},
            "offset": location_schema("Added to the copy's location (default 0,0,0)."),
        },
    },
    output_schema=DUPLICATED,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def duplicate(args: dict[str, Any]) -> Outcome:
    """Copy the object (and its data unless linked) into the original's collections."""
    return outcome(body.duplicate(args))


@tool(
    name="object.parent",
    touches=Touches(("child", "parent")),
    description=(
        "Make one object the child of another, keeping the child where it is in the world "
        "(its transform becomes relative to the parent). A parent that is the child or one "
        "of its descendants is invalid."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["child", "parent"],
        "properties": {
            "child": name_schema("Object to attach."),
            "parent": name_schema("Object it follows from now on."),
        },
    },
    output_schema=PARENTED,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def parent(args: dict[str, Any]) -> Outcome:
    """Refuse a cycle, then parent keeping the world transform."""
    return outcome(body.parent(args))


@tool(
    name="object.unparent",
    touches=Touches(("name",)),
    description=(
        "Detach an object from its parent, keeping it where it is in the world. An object "
        "without a parent is left as it is."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Object to detach.")},
    },
    output_schema=PARENTED,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def unparent(args: dict[str, Any]) -> Outcome:
    """Clear the parent keeping the world transform."""
    return outcome(body.unparent(args))
