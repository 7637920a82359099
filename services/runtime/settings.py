"""Settings from the environment, read once at start-up and passed down explicitly."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from contracts.subjects import check_token

PLANNERS = ("rules", "plan", "gemini")
TRACE_EXPORTERS = ("none", "console", "otlp")


class SettingsError(ValueError):
    """A setting has a value blendmesh cannot use; the message names it and the fix."""


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number; set it to seconds, e.g. 30") from None
    if not value > 0:
        raise SettingsError(f"{name}={raw!r} must be greater than 0")
    return value


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a whole number") from None
    if value < 1:
        raise SettingsError(f"{name}={raw!r} must be at least 1")
    return value


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
    """Gemini when it is configured, else the offline grammar."""
    return "gemini" if gemini_configured(env) else "rules"


def fallback_notice(env: Mapping[str, str]) -> str | None:
    """The one line to show when a request is planned offline only for want of a key."""
    if env.get("BLENDMESH_PLANNER") or gemini_configured(env):
        return None
    return (
        "blendmesh: no Gemini key is set, so the offline planner reads this request "
        "(docs/grammar.md); set GEMINI_API_KEY or GOOGLE_API_KEY to plan with Gemini"
    )


@dataclass(frozen=True)
class Settings:
    """Everything a blendmesh process needs to know about its environment."""

    home: Path  # state: the embedded NATS store, the audit views, saved scenes
    nats_url: str | None = None  # None: start an embedded nats-server in ``home``
    # Passwords of the NATS role users; None: ``home/nats-credentials.json``.
    nats_credentials: Path | None = None
    prefix: str = "blendmesh"  # first token of every subject; lets meshes share a server
    user: str = "local"
    planner: str = "rules"
    op_timeout: float = 60.0  # seconds one tool call may take
    ack_wait: float = 30.0  # seconds before JetStream redelivers an unacknowledged message
    max_deliver: int = 5  # deliveries before a message becomes a dead letter
    lease_ttl: float = 15.0  # seconds a dead executor keeps its scenes locked
    executors: int = 1  # executor instances the embedded mesh starts
    trace_exporter: str = "none"  # where spans go: none, console (stderr) or otlp
    # The gemini planner. The key is never a setting: google-genai reads it from the
    # environment itself, so it is neither stored here nor logged.
    gemini_model: str = "gemini-2.5-flash"
    gemini_temperature: float = 0.0  # 0 and a fixed seed: the same request, the same plan
    gemini_seed: int = 0
    gemini_base_url: str | None = None  # None: the SDK's default (or GOOGLE_GEMINI_BASE_URL)
    gemini_max_retries: int = 4  # retries of rate-limited or transient calls, with back-off
    policy_dir: Path | None = None  # None: the built-in services/policy/policies/*.cedar
    approval_ttl: float = 3600.0  # seconds a pending approval waits before the run fails

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            default_user = getpass.getuser()
        except (KeyError, OSError):
            default_user = "local"
        planner = env.get("BLENDMESH_PLANNER") or default_planner(env)
        if planner not in PLANNERS:
            raise SettingsError(
                f"BLENDMESH_PLANNER={planner!r} is not a planner; use one of {', '.join(PLANNERS)}"
            )
        prefix = env.get("BLENDMESH_PREFIX", "blendmesh")
        try:
            check_token(prefix, "BLENDMESH_PREFIX")
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        trace_exporter = env.get("BLENDMESH_TRACE") or "none"
        if trace_exporter not in TRACE_EXPORTERS:
            raise SettingsError(
                f"BLENDMESH_TRACE={trace_exporter!r} is not a trace exporter; "
                f"use one of {', '.join(TRACE_EXPORTERS)}"
            )
        return cls(
            home=Path(env.get("BLENDMESH_HOME", "var")).absolute(),
            nats_url=env.get("NATS_URL") or None,
            nats_credentials=Path(env["BLENDMESH_NATS_CREDENTIALS"]).absolute()
            if env.get("BLENDMESH_NATS_CREDENTIALS")
            else None,
            prefix=prefix,
            user=env.get("BLENDMESH_USER", default_user) or "local",
            planner=planner,
            op_timeout=_float(env, "BLENDMESH_OP_TIMEOUT", 60.0),
            ack_wait=_float(env, "BLENDMESH_ACK_WAIT", 30.0),
            max_deliver=_int(env, "BLENDMESH_MAX_DELIVER", 5),
            lease_ttl=_float(env, "BLENDMESH_LEASE_TTL", 15.0),
            executors=_int(env, "BLENDMESH_EXECUTORS", 1),
            trace_exporter=trace_exporter,
            gemini_model=env.get("BLENDMESH_GEMINI_MODEL") or "gemini-2.5-flash",
            gemini_temperature=_number(env, "BLENDMESH_GEMINI_TEMPERATURE", 0.0, float),
            gemini_seed=_number(env, "BLENDMESH_GEMINI_SEED", 0, int),
            gemini_base_url=env.get("BLENDMESH_GEMINI_BASE_URL") or None,
            gemini_max_retries=_number(env, "BLENDMESH_GEMINI_MAX_RETRIES", 4, int),
            policy_dir=Path(env["BLENDMESH_POLICY_DIR"]).absolute()
            if env.get("BLENDMESH_POLICY_DIR")
            else None,
            approval_ttl=_float(env, "BLENDMESH_APPROVAL_TTL", 3600.0),
        )

    def with_(self, **changes: object) -> Settings:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def scenes_dir(self) -> Path:
        return self.home / "scenes"

    @property
    def audit_db(self) -> Path:
        return self.home / "audit.sqlite3"

    @property
    def credentials_path(self) -> Path:
        return self.nats_credentials or self.home / "nats-credentials.json"

    @property
    def nats_store(self) -> Path:
        return self.home / "nats"

    @property
    def work_dir(self) -> Path:
        """Scratch space: checkpoints and other files that may be lost."""
        return self.home / "work"
