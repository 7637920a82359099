"""What the revision this session is in sync with changed against the one before it, as
the mesh lists it (``GET /api/scenes/{id}/changes``), and its reviews: fetched when the
artist asks, shown in the panel, the same lines ``blendmesh scenes diff`` prints."""

from typing import Any

from . import actions
from .session import shown_changes


def show(context: Any) -> bool:
    """Fetch the change list of the revision last pulled, pushed or applied here."""
    synced = actions.SESSION.synced
    if synced is None:
        actions.SESSION.failed("push or pull first: the list is of the revision you have")
        return False
    begun = actions._begin(context, f"reading what revision {synced.revision} changed")
    if begun is None:
        return False
    gw, _ = begun
    scene, revision = synced.scene_id, synced.revision

    def job(progress: Any) -> dict[str, Any]:
        return gw.changes(scene, revision)

    def done(listed: dict[str, Any]) -> None:
        actions.SESSION.busy = ""
        actions.SESSION.changes = shown_changes(listed)
        actions.SESSION.changes_of = (scene, revision)

    actions.WORKER.submit(job, done, actions.SESSION.failed, actions.SESSION.add_progress)
    return True
