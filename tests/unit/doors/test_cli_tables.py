"""Tables that fit 80 columns, more columns on wider terminals, and requests by name."""

from __future__ import annotations

import pytest
from rich.console import Console

from contracts.scene_files import import_plan, revert_plan
from services.doors.cli.reads import RUNS
from services.doors.cli.scenes import HISTORY, SCENES
from services.doors.cli.tables import Column, fitted_table, plan_text

RUN_ID = "run-0123456789abcdef0123"
LONG = "add a cube named Box at 0 0 1, add a bevel modifier to Box, then add a uv sphere"
RUN_ROW = {
    "run_id": RUN_ID,
    "state": "awaiting",
    "scene_id": "courtyard",
    "request": LONG,
    "created": "2026-11-24 10:56:58",
    "user": "ana",
    "planner": "rules",
    "error_code": None,
    "blend_path": "/srv/blendmesh/var/scenes/courtyard.blend",
}
HISTORY_ROW = {
    "revision": 12,
    "run_id": RUN_ID,
    "request": "import a .blend (12 KB)",
    "stored_at": "2026-11-24 10:56:58",
    "user": "ana",
    "scene_hash_prefix": "0123456789ab",
}
SCENE_ROW = {
    "scene_id": "courtyard-night",
    "revision": 12,
    "objects": 140,
    "run_id": RUN_ID,
    "changed_at": "2026-11-24 10:56:58",
    "changed_by": "ana",
}


def rendered(columns: list[Column], row: dict[str, object], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(fitted_table("t", [row, row], columns, width, stretch="request"))
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize(
    ("columns", "row"), [(RUNS, RUN_ROW), (HISTORY, HISTORY_ROW), (SCENES, SCENE_ROW)]
)
def test_fitted_table_when_terminal_is_narrow_fits_keeping_ids_whole(
    columns: list[Column], row: dict[str, object], width: int
) -> None:
    lines = rendered(columns, row, width)
    assert max(len(line) for line in lines) <= width
    body = [line for line in lines if RUN_ID in line]
    assert len(body) == 2  # one line a row, the id whole
    header = next(line for line in lines if "run_id" in line and RUN_ID not in line)
    assert all(name in header for name, at in columns if at == 0)  # the key columns, always


def test_fitted_table_when_terminal_is_wider_shows_more_columns() -> None:
    narrow, wide = "\n".join(rendered(RUNS, RUN_ROW, 80)), "\n".join(rendered(RUNS, RUN_ROW, 120))
    assert "user" not in narrow and "created" not in narrow
    assert "user" in wide and "2026-11-24 10:56:58" in wide
    piped = "\n".join(rendered(RUNS, RUN_ROW, 1000))
    assert LONG in piped and "courtyard.blend" in piped


def test_plan_text_when_import_or_revert_names_what_it_does() -> None:
    assert plan_text(import_plan("req-1", "sha256:" + "0" * 64, 12_345)) == (
        "import a .blend (12 KB)"
    )
    assert plan_text(revert_plan("req-2", 3)) == "revert to revision 3"
    assert plan_text({"operations": [{"tool_name": "object.create"}]}) == "plan: object.create"
    assert plan_text(None) == "(plan as written)"
