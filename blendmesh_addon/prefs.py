"""The add-on's preferences: which gateway, and the artist's own token."""

import bpy

PACKAGE = __package__ or "blendmesh"  # bl_ext.<repo>.blendmesh as an extension


class BlendmeshPreferences(bpy.types.AddonPreferences):
    bl_idname = PACKAGE

    gateway_url: bpy.props.StringProperty(  # type: ignore[valid-type]
        name="Gateway URL",
        description="Where `blendmesh up` serves its HTTP gateway",
        default="http://127.0.0.1:8000",
    )
    token: bpy.props.StringProperty(  # type: ignore[valid-type]
        name="Token",
        description="Your bearer token: the token of a token=user entry in "
        "BLENDMESH_API_TOKENS on the mesh",
        subtype="PASSWORD",
    )
    follow: bpy.props.BoolProperty(  # type: ignore[valid-type]
        name="Follow the scene",
        description="Show runs made through other doors and offer their revisions",
        default=True,
    )

    live: bpy.props.BoolProperty(  # type: ignore[valid-type]
        name="Live edits",
        description="Bring each of your runs on this scene into the open session as one "
        "undo step, without a reload (Ctrl-Z undoes it)",
        default=True,
    )
    before_ask: bpy.props.EnumProperty(  # type: ignore[valid-type]
        name="Before asking",
        description="What Ask does when you changed the scene since the last push or pull",
        items=[
            ("PUSH", "Push my changes first", "Your changes become their own revision, "
             "which the request then plans on"),
            ("REFUSE", "Refuse the request", "Nothing is sent until you push or pull"),
        ],
        default="PUSH",
    )  # fmt: skip

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.prop(self, "gateway_url")
        layout.prop(self, "token")
        layout.prop(self, "follow")
        layout.prop(self, "live")
        layout.prop(self, "before_ask")


def preferences(context: bpy.types.Context) -> BlendmeshPreferences:
    return context.preferences.addons[PACKAGE].preferences
