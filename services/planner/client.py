"""What the doors (CLI, gateway) may ask of the planner: which planner a request gets."""

from __future__ import annotations

from collections.abc import Mapping

from services.planner.settings import default_planner, fallback_notice
from services.runtime.service.settings import Settings

__all__ = ["fallback_notice", "planner_for"]


def planner_for(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The planner named in the settings, or the default for this environment."""
    return settings.planner or default_planner(settings.env if env is None else env)
