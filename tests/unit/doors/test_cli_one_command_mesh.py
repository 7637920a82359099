"""The embedded mesh a single command starts renders no previews: it stops once the
command has its answer, and the preview Blender started as the run committed was stopped
before it rendered anything."""

from __future__ import annotations

from pathlib import Path

from services.doors.cli.common import one_command_mesh
from services.runtime.service.settings import Settings


def test_one_command_mesh_when_previews_asked_for_starts_without_them(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, previews=True, user="ana", bridge_idle=7.0)
    mesh = one_command_mesh(settings, ("audit", "executor"))
    assert mesh.settings.previews is False
    assert mesh.services == ["audit", "executor"]
    # Nothing else of the person's settings changes.
    assert (mesh.settings.home, mesh.settings.user, mesh.settings.bridge_idle) == (
        tmp_path,
        "ana",
        7.0,
    )
