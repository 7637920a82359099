"""Settings from the environment, read once at start-up and passed down explicitly."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from contracts.subjects import check_token

PLANNERS = ("rules", "plan", "gemini")


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


@dataclass(frozen=True)
class Settings:
    """Everything a blendmesh process needs to know about its environment."""

    home: Path  # state: the embedded NATS store, the audit views, saved scenes
    nats_url: str | None = None  # None: start an embedded nats-server in ``home``
    prefix: str = "blendmesh"  # first token of every subject; lets meshes share a server
    user: str = "local"
    planner: str = "rules"
    op_timeout: float = 60.0  # seconds one tool call may take
    ack_wait: float = 30.0  # seconds before JetStream redelivers an unacknowledged message
    max_deliver: int = 5  # deliveries before a message becomes a dead letter

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            default_user = getpass.getuser()
        except (KeyError, OSError):
            default_user = "local"
        planner = env.get("BLENDMESH_PLANNER", "rules")
        if planner not in PLANNERS:
            raise SettingsError(
                f"BLENDMESH_PLANNER={planner!r} is not a planner; use one of {', '.join(PLANNERS)}"
            )
        prefix = env.get("BLENDMESH_PREFIX", "blendmesh")
        try:
            check_token(prefix, "BLENDMESH_PREFIX")
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        return cls(
            home=Path(env.get("BLENDMESH_HOME", "var")).absolute(),
            nats_url=env.get("NATS_URL") or None,
            prefix=prefix,
            user=env.get("BLENDMESH_USER", default_user) or "local",
            planner=planner,
            op_timeout=_float(env, "BLENDMESH_OP_TIMEOUT", 60.0),
            ack_wait=_float(env, "BLENDMESH_ACK_WAIT", 30.0),
            max_deliver=_int(env, "BLENDMESH_MAX_DELIVER", 5),
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
    def nats_store(self) -> Path:
        return self.home / "nats"

    @property
    def work_dir(self) -> Path:
        """Scratch space: checkpoints and other files that may be lost."""
        return self.home / "work"
