"""The ``blendmesh.<verb>`` operators: thin, each hands its work to ``actions``."""

from collections.abc import Callable
from typing import Any

import bpy

from . import actions, changes, view


class _Operator(bpy.types.Operator):
    bl_options = {"INTERNAL"}  # kept out of the file's operator history: see files.py

    def later(self, action: Callable[[Any], Any], what: str) -> set[str]:
        """Hand ``action`` to the timer; the panel says it is on its way."""
        if actions.SESSION.busy:  # a look at the scene under way only delays it
            actions.SESSION.error = "wait for the request that runs to end"
        else:
            actions.SESSION.start(what)
            actions.defer(action)
        view.redraw()
        return {"FINISHED"}


class BLENDMESH_OT_push(_Operator):
    """Push the open file to the mesh as the scene's next revision (a new scene, or an
    import that waits for your approval)"""

    bl_idname = "blendmesh.push"
    bl_label = "Push"

    def execute(self, context: bpy.types.Context) -> set[str]:
        return self.later(actions.push, "pushing the open file")


class BLENDMESH_OT_ask(_Operator):
    """Send the request in the prompt box as a run on the scene"""

    bl_idname = "blendmesh.ask"
    bl_label = "Ask"

    prompt: bpy.props.StringProperty(name="Request", default="")  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        prompt = self.prompt or context.window_manager.blendmesh_prompt
        return self.later(lambda c: actions.ask(c, prompt), "asking")


class _Resolve(_Operator):
    decision = ""
    approval_id: bpy.props.StringProperty(name="Approval")  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        chosen = self.approval_id or next((a["approvalId"] for a in actions.SESSION.approvals), "")
        decision = self.decision
        return self.later(lambda c: actions.resolve(c, chosen, decision), "resolving")


class BLENDMESH_OT_approve(_Resolve):
    """Approve the operations shown, as you, once"""

    bl_idname = "blendmesh.approve"
    bl_label = "Approve"
    decision = "approve_once"


class BLENDMESH_OT_reject(_Resolve):
    """Reject the operations shown: the run fails and the scene stays as it was"""

    bl_idname = "blendmesh.reject"
    bl_label = "Reject"
    decision = "reject"


class BLENDMESH_OT_cancel_run(_Operator):
    """Cancel the run: it stops, keeps nothing, and the scene stays as it was"""

    bl_idname = "blendmesh.cancel_run"
    bl_label = "Cancel Run"

    run_id: bpy.props.StringProperty(name="Run")  # type: ignore[valid-type]

    def execute(self, context: bpy.types.Context) -> set[str]:
        chosen = self.run_id or next((a["runId"] for a in actions.SESSION.approvals), "")
        return self.later(lambda c: actions.cancel(c, chosen), "cancelling")


class BLENDMESH_OT_pull(_Operator):
    """Bring the scene's newest revision into this session; your unsynced changes are
    never discarded"""

    bl_idname = "blendmesh.pull"
    bl_label = "Pull"

    keep_copy: bpy.props.BoolProperty(  # type: ignore[valid-type]
        name="Keep a Copy",
        description="When you changed the file since the last push or pull, save your "
        "version beside it under a new name, then pull",
        default=False,
    )

    def execute(self, context: bpy.types.Context) -> set[str]:
        keep_copy = self.keep_copy
        return self.later(lambda c: actions.pull(c, keep_copy), "checking the open file")


class BLENDMESH_OT_keep(_Operator):
    """Keep your changes and pull nothing"""

    bl_idname = "blendmesh.keep"
    bl_label = "Keep My Changes"

    def execute(self, context: bpy.types.Context) -> set[str]:
        actions.keep()
        view.redraw()
        return {"FINISHED"}


class BLENDMESH_OT_follow(_Operator):
    """Look at the scene now: newer revisions, runs through other doors, approvals"""

    bl_idname = "blendmesh.follow"
    bl_label = "Refresh"

    def execute(self, context: bpy.types.Context) -> set[str]:
        actions.follow_now()
        return {"FINISHED"}


class BLENDMESH_OT_changes(_Operator):
    """List what the revision you have changed against the one before it, and its reviews"""

    bl_idname = "blendmesh.changes"
    bl_label = "What Changed"

    def execute(self, context: bpy.types.Context) -> set[str]:
        return self.later(changes.show, "reading what changed")


CLASSES = (
    BLENDMESH_OT_push,
    BLENDMESH_OT_ask,
    BLENDMESH_OT_approve,
    BLENDMESH_OT_reject,
    BLENDMESH_OT_cancel_run,
    BLENDMESH_OT_pull,
    BLENDMESH_OT_keep,
    BLENDMESH_OT_follow,
    BLENDMESH_OT_changes,
)
