"""blendmesh inside Blender: the artist's open session as a door to a blendmesh mesh.

Push the open file as a scene revision, ask for a change, approve or reject what waits,
pull the result back, and follow runs made through other doors; every change goes
through the mesh's planner, policy, approvals and audit as the artist's own user (the
gateway's bearer token). An extension for Blender 4.2+ (``blender_manifest.toml``) and a
classic add-on for older Blenders (``bl_info``). It imports nothing but Blender and the
standard library.
"""

bl_info = {
    "name": "blendmesh",
    "author": "blendmesh",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "3D View > Sidebar > blendmesh",
    "description": "Change the open scene through a blendmesh mesh: planned, approved, audited",
    "category": "3D View",
}

# Blender's modules are imported when Blender registers the add-on, not before: the
# network client and the session logic (gateway.py, session.py, worker.py) import without
# Blender, so they are tested without it.


def register() -> None:
    import bpy

    from . import actions, content, operators, panel, prefs

    for cls in (prefs.BlendmeshPreferences, *operators.CLASSES, *panel.CLASSES):
        bpy.utils.register_class(cls)
    content.watch()
    bpy.types.Scene.blendmesh_scene = bpy.props.StringProperty(
        name="Scene id",
        description="The blendmesh scene this file is pushed to and pulled from "
        "(1-128 letters, digits, '_' or '-'; empty: the file's name)",
        maxlen=128,
    )
    bpy.types.WindowManager.blendmesh_prompt = bpy.props.StringProperty(
        name="Request",
        description="What to change, e.g. 'add a cube named Box at 0 0 1'",
        maxlen=4000,
    )
    # Persistent: opening a pulled file must not stop the add-on's timer.
    bpy.app.timers.register(actions.tick, first_interval=0.5, persistent=True)


def unregister() -> None:
    import bpy

    from . import actions, content, operators, panel, prefs

    if bpy.app.timers.is_registered(actions.tick):
        bpy.app.timers.unregister(actions.tick)
    content.unwatch()
    del bpy.types.WindowManager.blendmesh_prompt
    del bpy.types.Scene.blendmesh_scene
    for cls in reversed((prefs.BlendmeshPreferences, *operators.CLASSES, *panel.CLASSES)):
        bpy.utils.unregister_class(cls)
