"""The planner's own settings: which planner is the default, and the Gemini model's knobs.

Read from the environment the process's Settings were read from (``Settings.env``). The
API key is never a setting: google-genai reads it from the environment itself, so it is
neither stored here nor logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from contracts.geonodes import DEFAULT_MAX_PYTHON_CHARS, PYTHON_CHARS_CEILING
from contracts.limits import DEFAULT_MAX_OPERATIONS
from services.runtime.service.settings import SettingsError

_N = TypeVar("_N", int, float)


def _number(env: Mapping[str, str], name: str, default: _N, kind: type[_N]) -> _N:
    """A number that may be 0 (temperature, seed, retries) but not negative."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise SettingsError(f"{name}={raw!r} is not {what}") from None
    if value < 0:
        raise SettingsError(f"{name}={raw!r} must not be negative")
    return value


def gemini_configured(env: Mapping[str, str]) -> bool:
    """Whether google-genai will find credentials: an API key, or Vertex AI settings."""
    if env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY"):
        return True
    vertex = env.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("true", "1")
    return vertex and bool(env.get("GOOGLE_CLOUD_PROJECT"))


def default_planner(env: Mapping[str, str]) -> str:
    """The planner a request gets when none is chosen: Gemini when it is configured."""
    return env.get("BLENDMESH_PLANNER") or ("gemini" if gemini_configured(env) else "rules")


def fallback_notice(env: Mapping[str, str]) -> str | None:
    """The one line to show when a request is planned offline only for want of a key."""
    if env.get("BLENDMESH_PLANNER") or gemini_configured(env):
        return None
    return (
        "blendmesh: no Gemini key is set, so the offline planner reads this request "
        "(docs/grammar.md); set GEMINI_API_KEY or GOOGLE_API_KEY to plan with Gemini"
    )


@dataclass(frozen=True)
class GeminiSettings:
    """How the gemini planner calls its model."""

    model: str = "gemini-2.5-flash"
    temperature: float = 0.0  # 0 and a fixed seed: the same request, the same plan
    seed: int = 0
    base_url: str | None = None  # None: the SDK's default (or GOOGLE_GEMINI_BASE_URL)
    max_retries: int = 4  # retries of rate-limited or transient calls, with back-off

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GeminiSettings:
        return cls(
            model=env.get("BLENDMESH_GEMINI_MODEL") or "gemini-2.5-flash",
            temperature=_number(env, "BLENDMESH_GEMINI_TEMPERATURE", 0.0, float),
            seed=_number(env, "BLENDMESH_GEMINI_SEED", 0, int),
            base_url=env.get("BLENDMESH_GEMINI_BASE_URL") or None,
            max_retries=_number(env, "BLENDMESH_GEMINI_MAX_RETRIES", 4, int),
        )


@dataclass(frozen=True)
class PlanLimits:
    """How much one plan may hold: operations (BLENDMESH_MAX_OPERATIONS, read with the
    runtime settings) and the code of a spec 004 PYTHON step (BLENDMESH_MAX_PYTHON_CHARS)."""

    max_operations: int = DEFAULT_MAX_OPERATIONS
    max_python_chars: int = DEFAULT_MAX_PYTHON_CHARS

    @classmethod
    def from_env(cls, env: Mapping[str, str], max_operations: int) -> PlanLimits:
        chars = _number(env, "BLENDMESH_MAX_PYTHON_CHARS", DEFAULT_MAX_PYTHON_CHARS, int)
        if not 1 <= chars <= PYTHON_CHARS_CEILING:
            raise SettingsError(
                f"BLENDMESH_MAX_PYTHON_CHARS={chars} must be between 1 and {PYTHON_CHARS_CEILING}"
            )
        return cls(max_operations=max_operations, max_python_chars=chars)


DEFAULT_LIMITS = PlanLimits()
