"""The sidebar panel: 3D view, N panel, "blendmesh" tab."""

import blf
import bpy

from . import actions
from .prefs import preferences
from .session import approval_lines, run_words
from .wrapping import wrap

# Pixels at UI scale 1 that a label in the sidebar does not get for its text: the
# region's margins and its strip of tabs, the panel's, a box's and the icon's. Measured
# in Blender 3.4: a region 229 px wide showed 134 px of a boxed label's text.
MARGIN_PX = 100
_width = [200.0]  # pixels a label's text gets in the sidebar as it was last drawn


def _text(layout: bpy.types.UILayout, text: str, icon: str = "NONE") -> None:
    """``text`` wrapped to the sidebar's width: Blender cuts a long label short."""
    for n, line in enumerate(wrap(text, _width[0], _text_width)):
        layout.label(text=line, icon=icon if n == 0 else "BLANK1")


def _text_width(text: str) -> float:
    return float(blf.dimensions(0, text)[0])


def _measure(context: bpy.types.Context) -> None:
    """Size the measuring font as the UI draws its labels, and note the room there is."""
    # The UI's own factor: the resolution scale times what the display's DPI adds (under
    # an X server of 75 dpi, 1.04 at a scale of 1.0); ui_scale alone drew 12 % narrower.
    scale = (context.preferences.system.dpi or 72) / 72
    style = context.preferences.ui_styles[0]
    points = getattr(style, "widget_label", style.widget).points  # 4.x draws labels as widgets
    try:
        blf.size(0, points * scale)  # pixels from 4.0; 3.4 took them at 72 dpi, the same
    except TypeError:  # a Blender before 3.4, where the dpi argument was still required
        blf.size(0, int(points * scale), 72)
    _width[0] = max(80.0, context.region.width - MARGIN_PX * scale)


STATUS = {"awaiting_confirmation": "waiting for approval"}


class BLENDMESH_PT_panel(bpy.types.Panel):
    bl_idname = "BLENDMESH_PT_panel"
    bl_label = "blendmesh"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "blendmesh"

    def draw(self, context: bpy.types.Context) -> None:
        session = actions.SESSION
        layout = self.layout
        _measure(context)
        if session.user:
            layout.label(text=f"You are {session.user} on the mesh", icon="USER")
        # Beside who the token is: a refused token is fixed where the panel says so.
        layout.prop(preferences(context), "token", text="Token")
        layout.prop(context.scene, "blendmesh_scene", text="Scene")
        synced = session.synced
        if synced is not None:
            row = layout.row()
            row.label(text=f"In sync with revision {synced.revision}", icon="CHECKMARK")
            row.operator("blendmesh.changes", text="", icon="TEXT")
        else:
            layout.label(text="Not pushed or pulled yet", icon="INFO")
        row = layout.row(align=True)
        row.enabled = not session.busy
        row.operator("blendmesh.push", icon="EXPORT")
        row.operator("blendmesh.pull", icon="IMPORT")
        layout.label(text="What should change?")
        prompt = context.window_manager.blendmesh_prompt
        layout.prop(context.window_manager, "blendmesh_prompt", text="")
        if _text_width(prompt) > _width[0]:
            # Blender's text field is one line and scrolls: a long request is read back
            # whole, in lines, so the artist sees what Ask will send.
            _text(layout.box().column(align=True), prompt, "TEXT")
        ask = layout.row()
        ask.enabled = not session.busy
        ask.operator("blendmesh.ask", icon="PLAY")
        if session.busy:
            _text(layout, session.busy + " ...", "SORTTIME")
        if session.error:
            _text(layout.box().column(align=True), session.error, "ERROR")
        if session.notice:
            _text(layout.box().column(align=True), session.notice, "INFO")
        if session.changed_locally:
            self.draw_changed(layout)
        for approval in session.approvals[:3]:
            self.draw_approval(layout, approval, not session.busy)
        if session.progress and session.busy:  # the answer says the rest once it came
            box = layout.box()
            box.label(text="Progress", icon="TEXT")
            column = box.column(align=True)
            for line in session.progress[-4:]:
                _text(column, line)
        self.draw_followed(layout, session)
        listed = session.listed_changes()
        if listed:
            box = layout.box()
            box.label(text="What changed", icon="TEXT")
            column = box.column(align=True)
            for line in listed:
                _text(column, line)

    def draw_changed(self, layout: bpy.types.UILayout) -> None:
        box = layout.box()
        _text(box, "You changed this file since the last push or pull.", "ERROR")
        pushed, pulled = actions.SESSION.choices()
        _text(box, pushed, "EXPORT")
        _text(box, pulled, "DUPLICATE")
        column = box.column(align=True)
        column.operator("blendmesh.push", text="Push My Changes First", icon="EXPORT")
        pull = column.operator("blendmesh.pull", text="Keep a Copy and Pull", icon="DUPLICATE")
        pull.keep_copy = True
        column.operator("blendmesh.keep", text="Keep Mine and Stop", icon="CANCEL")

    def draw_approval(self, layout: bpy.types.UILayout, approval: dict, enabled: bool) -> None:
        box = layout.box()
        box.label(text="Waiting for your approval", icon="QUESTION")
        column = box.column(align=True)
        _text(column, f"run {approval.get('runId')}")
        for kind, line in approval_lines(approval):
            if kind == "code":  # code keeps its lines: cut, never re-flowed
                column.label(text=line)
            elif kind == "hash":
                _text(column, line, "LOCKED")
            elif kind == "operation":
                _text(column, line, "DOT")
            else:
                _text(column, line)
        row = box.row(align=True)
        row.enabled = enabled
        approve = row.operator("blendmesh.approve", icon="CHECKMARK")
        approve.approval_id = approval["approvalId"]
        reject = row.operator("blendmesh.reject", icon="X")
        reject.approval_id = approval["approvalId"]
        cancel = box.operator("blendmesh.cancel_run", icon="CANCEL")
        cancel.run_id = str(approval.get("runId", ""))

    def draw_followed(self, layout: bpy.types.UILayout, session: actions.Session) -> None:
        if session.newer:
            box = layout.box()
            box.label(text="Newer on the mesh", icon="FILE_REFRESH")
            column = box.column(align=True)
            for entry in session.newer:
                tools = ", ".join(entry.get("tools") or []) or "?"
                _text(column, f"revision {entry.get('revision')} by {entry.get('user')}: {tools}")
            if session.too_new:
                _text(column, f"Open them in Blender {session.too_new} or later: this one cannot.")
            elif not session.busy:
                box.operator("blendmesh.pull", text="Pull Newest", icon="IMPORT")
        if session.others:
            box = layout.box()
            row = box.row()
            row.label(text="Runs on this scene", icon="SEQUENCE")
            row.operator("blendmesh.follow", text="", icon="FILE_REFRESH")
            column = box.column(align=True)
            for run in session.others[:5]:
                status = STATUS.get(str(run.get("status")), str(run.get("status")))
                asked = run_words(run)
                _text(column, f"{asked}: {status}", "DOT")


CLASSES = (BLENDMESH_PT_panel,)
