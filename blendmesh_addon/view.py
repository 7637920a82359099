"""What the add-on reads of Blender's UI and tells it to draw: the artist's selection for
a request, and the sidebars the panel is in."""

from typing import Any

import bpy

MAX_FOCUS = 500  # selected names a request carries (the gateway's limit)


def focus(context: Any) -> dict[str, Any]:
    """What the artist has selected now: "it" and "this" are the active object, "the
    selected ones" the selection, when the planner reads the request."""
    # From the view layer, not context.selected_objects: the ask runs from the add-on's
    # timer, whose context has no window to select in.
    layer = context.view_layer
    selected = [ob.name for ob in layer.objects if ob.select_get()][:MAX_FOCUS]
    active = layer.objects.active
    return {"selected": selected, "active": active.name if active else None}


def redraw() -> None:
    """Redraw the sidebars the panel is in, not the whole 3D view: a viewport redrawn
    every few seconds for nothing stalled a heavy scene (frames of up to 2.5 s)."""
    for window in getattr(bpy.context.window_manager, "windows", []):
        for area in window.screen.areas:
            if area.type == "VIEW_3D":
                for region in area.regions:
                    if region.type == "UI":
                        region.tag_redraw()


def sent(sent: int, size: int) -> str:
    """The progress line of a push: only the parts of the file the mesh lacked travel."""
    mib = 1024 * 1024
    return f"sent {sent / mib:.2f} MiB of the {size / mib:.1f} MiB file: the parts the mesh lacked"
