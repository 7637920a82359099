"""BLENDMESH_WARM_HOLD: seconds an executor keeps a scene held after a run (ADR 0037)."""

from __future__ import annotations

import pytest

from services.runtime.service.settings import Settings, SettingsError


@pytest.mark.parametrize(
    ("raw", "seconds"), [(None, 60.0), ("", 60.0), ("5", 5.0), ("0.5", 0.5), ("0", 0.0)]
)
def test_settings_when_warm_hold_set_reads_seconds_or_off(raw: str | None, seconds: float) -> None:
    env = {} if raw is None else {"BLENDMESH_WARM_HOLD": raw}
    assert Settings.from_env(env).warm_hold == seconds


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("soon", "BLENDMESH_WARM_HOLD='soon' is not a number"),
        ("-5", "BLENDMESH_WARM_HOLD='-5' must be greater than 0, or 0 to turn it off"),
    ],
)
def test_settings_when_warm_hold_bad_raises_naming_it(raw: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env({"BLENDMESH_WARM_HOLD": raw})
