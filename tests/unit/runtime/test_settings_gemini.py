"""Settings of the gemini planner: which planner runs by default, and the model's knobs."""

from __future__ import annotations

import pytest

from services.planner.client import fallback_notice, planner_for
from services.planner.settings import GeminiSettings
from services.runtime.service.settings import Settings, SettingsError


@pytest.mark.parametrize(
    ("env", "planner"),
    [
        ({}, "rules"),
        ({"GEMINI_API_KEY": "k"}, "gemini"),
        ({"GOOGLE_API_KEY": "k"}, "gemini"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"}, "gemini"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_CLOUD_PROJECT": "p"}, "gemini"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}, "rules"),
        ({"GOOGLE_GENAI_USE_VERTEXAI": "false", "GOOGLE_CLOUD_PROJECT": "p"}, "rules"),
        ({"GEMINI_API_KEY": ""}, "rules"),
        ({"GEMINI_API_KEY": "k", "BLENDMESH_PLANNER": "rules"}, "rules"),
        ({"BLENDMESH_PLANNER": "gemini"}, "gemini"),
    ],
)
def test_settings_when_credentials_vary_pick_the_default_planner(
    env: dict[str, str], planner: str
) -> None:
    assert planner_for(Settings.from_env(env)) == planner


def test_settings_when_env_empty_use_reproducible_gemini_defaults() -> None:
    s = GeminiSettings.from_env({})
    assert (s.model, s.temperature, s.seed) == ("gemini-2.5-flash", 0.0, 0)
    assert s.base_url is None and s.max_retries == 4


def test_settings_when_gemini_values_set_reads_them_and_never_the_key() -> None:
    env = {
        "GEMINI_API_KEY": "secret-key-value",
        "BLENDMESH_GEMINI_MODEL": "gemini-2.5-pro",
        "BLENDMESH_GEMINI_TEMPERATURE": "0.4",
        "BLENDMESH_GEMINI_SEED": "7",
        "BLENDMESH_GEMINI_BASE_URL": "http://127.0.0.1:8080",
        "BLENDMESH_GEMINI_MAX_RETRIES": "0",
    }
    s = GeminiSettings.from_env(env)
    assert (s.model, s.temperature, s.seed) == ("gemini-2.5-pro", 0.4, 7)
    assert s.base_url == "http://127.0.0.1:8080" and s.max_retries == 0
    assert "secret-key-value" not in repr(s) + repr(Settings.from_env(env))


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BLENDMESH_GEMINI_TEMPERATURE": "warm"}, "is not a number"),
        ({"BLENDMESH_GEMINI_TEMPERATURE": "-0.5"}, "must not be negative"),
        ({"BLENDMESH_GEMINI_SEED": "1.5"}, "is not a whole number"),
        ({"BLENDMESH_GEMINI_MAX_RETRIES": "-1"}, "must not be negative"),
    ],
)
def test_settings_when_gemini_value_bad_raises_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        GeminiSettings.from_env(env)


def test_fallback_notice_when_no_key_and_no_choice_says_how_to_enable_gemini() -> None:
    notice = fallback_notice({})
    assert notice is not None and "\n" not in notice
    assert "offline planner" in notice and "GEMINI_API_KEY" in notice


@pytest.mark.parametrize("env", [{"GEMINI_API_KEY": "k"}, {"BLENDMESH_PLANNER": "rules"}])
def test_fallback_notice_when_key_set_or_planner_chosen_is_none(env: dict[str, str]) -> None:
    assert fallback_notice(env) is None
