"""The geometry budget's limits as the bridge reads them from its environment."""

from __future__ import annotations

import pytest

from services.bridge.budget.budget import LIMITS, BudgetSettingError, GeometryBudget


def test_budget_when_environment_sets_nothing_has_the_documented_defaults() -> None:
    assert GeometryBudget.from_env({}) == GeometryBudget(
        object_vertices=2_000_000,
        scene_vertices=8_000_000,
        object_copies=50_000,
        scene_copies=250_000,
    )


def test_budget_when_each_variable_set_reads_it_and_keeps_the_others() -> None:
    for field, (variable, _, _) in LIMITS.items():
        budget = GeometryBudget.from_env({variable: "1234", "BLENDMESH_OTHER": "9"})
        assert getattr(budget, field) == 1234
        others = {f: getattr(budget, f) for f in LIMITS if f != field}
        assert others == {f: getattr(GeometryBudget(), f) for f in LIMITS if f != field}


def test_budget_when_variable_is_blank_keeps_the_default() -> None:
    assert GeometryBudget.from_env({"BLENDMESH_MAX_OBJECT_COPIES": " "}) == GeometryBudget()


@pytest.mark.parametrize(
    ("raw", "said"),
    [("lots", "is not a whole number"), ("2.5", "is not a whole number"), ("0", "at least 1")],
)
def test_budget_when_variable_unusable_refuses_naming_it(raw: str, said: str) -> None:
    with pytest.raises(BudgetSettingError, match=f"BLENDMESH_MAX_SCENE_VERTICES='{raw}' .*{said}"):
        GeometryBudget.from_env({"BLENDMESH_MAX_SCENE_VERTICES": raw})


def test_refusal_when_over_names_estimate_limit_variable_and_cause() -> None:
    said = GeometryBudget().refusal(
        "object_copies", 100_001, "object 'Box'", ": modifier 'Array' (ARRAY) fit_length 2e+05"
    )
    assert said == (
        "object 'Box' would have 100,001 copies and instances, over the 50,000 an object may "
        "have (BLENDMESH_MAX_OBJECT_COPIES): modifier 'Array' (ARRAY) fit_length 2e+05"
    )
