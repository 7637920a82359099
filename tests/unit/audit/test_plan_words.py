"""A run made without words (an import, a revert, a plan as written) is listed by what it
does: the runs view keeps its words beside the prompt a request in words has."""

from __future__ import annotations

import msgspec

from contracts import events as ev
from contracts.scene_files import MAX_PLAN_WORDS, import_plan, plan_words, revert_plan
from services.audit.projections import RunView, project
from tests.unit.test_model_handlers import REQUESTED

BLOB = "sha256:" + "0" * 64


def run_row(event: ev.RunRequested) -> dict[str, object]:
    [row] = [c.row for c in project(event, 1, RunView()) if c.table == "runs"]
    return row


def test_runs_view_when_an_import_is_requested_keeps_what_it_does() -> None:
    plan = import_plan("req-1", BLOB, 80_405_448)
    imported = msgspec.structs.replace(REQUESTED, prompt=None, plan=plan, planner="rules")
    row = run_row(imported)
    assert row["prompt"] is None and row["plan_words"] == "import a .blend (76.7 MB)"


def test_runs_view_when_a_request_is_in_words_keeps_no_second_copy() -> None:
    row = run_row(REQUESTED)
    assert row["prompt"] == "add a cube named Box" and row["plan_words"] is None


def test_plan_words_when_plan_is_revert_long_or_hostile_stays_short_and_plain() -> None:
    assert plan_words(revert_plan("req-2", 3)) == "revert to revision 3"
    assert plan_words(import_plan("req-3", BLOB, 12_345)) == "import a .blend (12 KB)"
    many = {"operations": [{"tool_name": "object.create"}] * 500}
    said = plan_words(many)
    assert len(said) == MAX_PLAN_WORDS and said.startswith("plan: object.create, ")
    # A plan that is not what a plan should be is named as written, never an error.
    for hostile in (None, [], {"operations": "x"}, {"operations": [1, "a"]}):
        assert plan_words(hostile) == "(plan as written)"
    odd = {"operations": [{"tool_name": "scene.import", "args": ["not", "a", "dict"]}]}
    assert plan_words(odd) == "import a .blend"
