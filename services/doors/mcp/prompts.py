"""MCP prompts: common ways to start, as messages a host puts before its model.

Each prompt is a user message naming the scene, the tools to use and the checks to make,
filled in from its arguments; it changes nothing itself. Arguments are free text from the
host's person, so each is bounded and a scene id must be one (``ID_PATTERN``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import mcp.types as types

from services.doors.mcp.errors import ValidationError
from services.doors.mcp.tools import ID_PATTERN

MAX_ARGUMENT = 200  # characters of one argument a prompt takes
_ID = re.compile(ID_PATTERN)


def _room(args: dict[str, str]) -> str:
    size = args.get("size") or "6 x 4 m, 3 m high"
    return (
        f"Block out a room in blendmesh scene `{args['scene_id']}`: {size}"
        f"{'; ' + args['style'] if args.get('style') else ''}.\n"
        "1. Call `list_category` for the core tools and the categories, and `search_tools` "
        "for the others, with their arguments.\n"
        "2. With the `run` tool and one plan: a floor (object.create, primitive plane, "
        "scaled to the room), four walls as thin scaled cubes named Wall_N/E/S/W, a doorway "
        "gap in one wall, a camera at eye height (1.6 m) in the doorway "
        "(camera.create, camera.set_active) and a sun light (light.create). Put them in "
        "collections Room and Staging (collection.create, collection.move).\n"
        "3. Check the result with `render_view` from above (elevation 80) and through the "
        "camera, and `inspect_object` on a wall for its world bounds.\n"
        "Keep every object named; say what you would change next."
    )


def _product(args: dict[str, str]) -> str:
    subject = args["object"]
    mood = args.get("mood") or "clean studio, soft shadows"
    return (
        f"Light a product shot of `{subject}` in blendmesh scene `{args['scene_id']}` "
        f"({mood}).\n"
        f"1. `inspect_object` on `{subject}` for its world bounds and size.\n"
        "2. With the `run` tool and one plan (tools from `list_category` and "
        "`search_tools`): a three-point rig of area lights (light.create: key at 45 degrees "
        "to the front and above, fill opposite at a third of the key's power, rim behind), "
        "a seamless backdrop (a plane behind and under it), and a camera framing it "
        "(camera.create, camera.set_active) at a lens of 85 mm.\n"
        "3. Check with `render_view` through the camera and from the side (azimuth 90); "
        "adjust powers with light.set until the subject reads clearly.\n"
        "Do not move or change the subject itself."
    )


_SCENE_ARG = types.PromptArgument(
    name="scene_id", description="the scene to work on, e.g. `default`", required=True
)
PROMPTS: list[types.Prompt] = [
    types.Prompt(
        name="block_out_room",
        title="Block out a room",
        description="Floor, walls, a doorway, a camera and a light, then check the views.",
        arguments=[
            _SCENE_ARG,
            types.PromptArgument(name="size", description="e.g. `5 x 4 m, 2.7 m high`"),
            types.PromptArgument(name="style", description="e.g. `loft with tall windows`"),
        ],
    ),
    types.Prompt(
        name="light_product_shot",
        title="Light a product shot",
        description="A three-point rig, a backdrop and a camera around one object.",
        arguments=[
            _SCENE_ARG,
            types.PromptArgument(
                name="object", description="the product object's name", required=True
            ),
            types.PromptArgument(name="mood", description="e.g. `warm, dramatic`"),
        ],
    ),
]
_TEXTS: dict[str, Callable[[dict[str, str]], str]] = {
    "block_out_room": _room,
    "light_product_shot": _product,
}


def get(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """The prompt ``name`` filled in; ``ValidationError`` naming a wrong or missing one."""
    prompt = next((p for p in PROMPTS if p.name == name), None)
    if prompt is None:
        known = ", ".join(p.name for p in PROMPTS)
        raise ValidationError(f"no prompt {name[:64]!r}; this server has: {known}")
    args = dict(arguments or {})
    allowed = {a.name for a in prompt.arguments or []}
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise ValidationError(f"unknown argument; {name} takes: {', '.join(sorted(allowed))}")
    for arg in prompt.arguments or []:
        value = args.get(arg.name)
        if arg.required and not value:
            raise ValidationError(f"missing argument: {arg.name}")
        if value is not None and len(value) > MAX_ARGUMENT:
            raise ValidationError(f"argument {arg.name} is over {MAX_ARGUMENT} characters")
    if not _ID.fullmatch(args["scene_id"]):
        raise ValidationError(f"argument scene_id must match {ID_PATTERN}")
    text = _TEXTS[name](args)
    return types.GetPromptResult(
        description=prompt.description,
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        ],
    )
