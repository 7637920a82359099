"""Settings from the environment, read once at start-up and passed down explicitly."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from contracts.errors import BlendmeshError
from contracts.limits import DEFAULT_MAX_OPERATIONS, MAX_BRIDGES
from contracts.scene_files import DEFAULT_MAX_UPLOAD_BYTES
from contracts.subjects import check_token
from services.runtime.nats.ready import READY_WAIT

PLANNERS = ("rules", "plan", "gemini")
TRACE_EXPORTERS = ("none", "console", "otlp")
MAX_REPLICAS = 5  # JetStream keeps at most five copies of a stream


class SettingsError(BlendmeshError, ValueError):
    """A setting has a value blendmesh cannot use; the message names it and the fix."""


def _seconds_or_never(env: Mapping[str, str], name: str, default: float) -> float | None:
    """Seconds greater than 0, or ``0`` for never (None)."""
    if env.get(name, "").strip() == "0":
        return None
    try:
        return _float(env, name, default)
    except SettingsError as exc:
        raise SettingsError(f"{exc}, or 0 to never stop it") from None


def _seconds_or_off(env: Mapping[str, str], name: str, default: float) -> float:
    """Seconds greater than 0, or ``0`` to turn the feature off."""
    if env.get(name, "").strip() == "0":
        return 0.0
    try:
        return _float(env, name, default)
    except SettingsError as exc:
        raise SettingsError(f"{exc}, or 0 to turn it off") from None


MAX_CATALOG_WAIT = 86400.0  # a day: a rolling upgrade that takes longer is a stuck one


def _catalog_wait(env: Mapping[str, str]) -> float:
    value = _float(env, "BLENDMESH_CATALOG_WAIT", 300.0)
    if value > MAX_CATALOG_WAIT:
        raise SettingsError(
            f"BLENDMESH_CATALOG_WAIT={value:g} is more than {MAX_CATALOG_WAIT:g} seconds (a "
            "day); set it lower: a run waits that long for an executor of its catalog"
        )
    return value


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


def _replicas(env: Mapping[str, str]) -> int:
    value = _int(env, "BLENDMESH_REPLICAS", 1)
    if value > MAX_REPLICAS:
        raise SettingsError(
            f"BLENDMESH_REPLICAS={env['BLENDMESH_REPLICAS']!r} is more copies than JetStream "
            f"keeps (at most {MAX_REPLICAS}); use 1, 3 or 5, no more than the cluster's servers"
        )
    return value


def _port(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) > 65535:
        raise SettingsError(f"{name}={raw!r} is not a port; use 1 to 65535, or 0 for any free one")
    return int(raw)


def _bridges(env: Mapping[str, str]) -> int | None:
    if not env.get("BLENDMESH_BRIDGES", "").strip():
        return None
    count = _int(env, "BLENDMESH_BRIDGES", 1)
    if not 1 <= count <= MAX_BRIDGES:
        raise SettingsError(
            f"BLENDMESH_BRIDGES={count} is out of range; use 1 to {MAX_BRIDGES}, "
            "or leave it unset to size the pool by cores and memory"
        )
    return count


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"{name}={env[name]!r} is not a yes or no; set it to 1 or 0")


@dataclass(frozen=True)
class Settings:
    """Everything a blendmesh process needs to know about its environment."""

    home: Path  # state: the embedded NATS store, the audit views, saved scenes
    nats_url: str | None = None  # None: start an embedded nats-server in ``home``
    # Passwords of the NATS role users; None: ``home/nats-credentials.json``.
    nats_credentials: Path | None = None
    require_auth: bool = False  # refuse to join NATS_URL without credentials
    prefix: str = "blendmesh"  # first token of every subject; lets meshes share a server
    user: str = "local"
    planner: str | None = None  # None: the planner's default (services/planner/client.py)
    op_timeout: float = 60.0  # seconds one tool call may take
    ack_wait: float = 30.0  # seconds before JetStream redelivers an unacknowledged message
    max_deliver: int = 5  # deliveries before a message becomes a dead letter
    lease_ttl: float = 15.0  # seconds a dead executor keeps its scenes locked
    # Seconds an executor keeps holding a scene after a run, so the next run on it comes
    # back to the Blender that has it loaded (ADR 0037); 0: released after each run.
    warm_hold: float = 60.0
    executors: int = 1  # executor instances the embedded mesh starts
    # Blender bridges each executor keeps, for runs on different scenes at once (ADR
    # 0070); None: as many as memory holds, at most MAX_BRIDGES (ADR 0078).
    bridges: int | None = None
    # The embedded mesh runs the audit projection in a child process of its own, off the
    # runs' event loop (ADR 0070); its run metrics are then served by that process.
    audit_apart: bool = False
    trace_exporter: str = "none"  # where spans go: none, console (stderr) or otlp
    policy_dir: Path | None = None  # None: the built-in services/policy/policies/*.cedar
    approval_ttl: float = 3600.0  # seconds a pending approval waits before the run fails
    max_operations: int = DEFAULT_MAX_OPERATIONS  # operations one plan may hold
    max_body_bytes: int = 1024 * 1024  # largest HTTP request body the gateway reads
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES  # largest .blend a scene import takes
    replicas: int = 1  # copies of every stream, KV bucket and object store (3 on a cluster)
    previews: bool = True  # render each scene's newest revision (a second Blender process)
    # Seconds a Blender bridge may sit unused before it is stopped (the next run starts it
    # again); None: never stopped.
    bridge_idle: float | None = 120.0
    # Seconds a run pinned to a tool catalog no executor here serves waits for one that
    # does before it fails CATALOG_UNSERVED (ADR 0053).
    catalog_wait: float = 300.0
    # Executors run tools tagged unsafe_ops (spec 001 safety modes) only with this opt-in.
    allow_unsafe_ops: bool = False
    start_wait: float = READY_WAIT  # seconds a starting service waits for JetStream to be ready
    # Retention (docs/storage.md): revisions kept per scene beside the tagged ones; seconds
    # an unnamed chunk, a Python step's result image and a staged upload are kept; seconds
    # between the executor's collections.
    keep_revisions: int = 50
    chunk_grace: float = 3600.0
    result_ttl: float = 7 * 24 * 3600.0
    upload_ttl: float = 24 * 3600.0
    gc_interval: float = 3600.0
    # A service run as a process of its own serves /metrics here (None: it does not);
    # ``blendmesh up`` serves them on the gateway's port (docs/operations.md).
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # When set, /metrics asks for it as a bearer token; never shown.
    metrics_token: str | None = field(default=None, repr=False)
    # The environment these settings were read from: a service reads its own settings
    # from it (the planner its model's). Never shown, since it may hold API keys.
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            default_user = getpass.getuser()
        except (KeyError, OSError):
            default_user = "local"
        planner = env.get("BLENDMESH_PLANNER") or None
        if planner is not None and planner not in PLANNERS:
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
            require_auth=_flag(env, "BLENDMESH_REQUIRE_AUTH"),
            prefix=prefix,
            user=env.get("BLENDMESH_USER", default_user) or "local",
            planner=planner,
            op_timeout=_float(env, "BLENDMESH_OP_TIMEOUT", 60.0),
            ack_wait=_float(env, "BLENDMESH_ACK_WAIT", 30.0),
            max_deliver=_int(env, "BLENDMESH_MAX_DELIVER", 5),
            lease_ttl=_float(env, "BLENDMESH_LEASE_TTL", 15.0),
            warm_hold=_seconds_or_off(env, "BLENDMESH_WARM_HOLD", 60.0),
            executors=_int(env, "BLENDMESH_EXECUTORS", 1),
            bridges=_bridges(env),
            audit_apart=_flag(env, "BLENDMESH_AUDIT_APART"),
            trace_exporter=trace_exporter,
            policy_dir=Path(env["BLENDMESH_POLICY_DIR"]).absolute()
            if env.get("BLENDMESH_POLICY_DIR")
            else None,
            approval_ttl=_float(env, "BLENDMESH_APPROVAL_TTL", 3600.0),
            max_operations=_int(env, "BLENDMESH_MAX_OPERATIONS", DEFAULT_MAX_OPERATIONS),
            max_body_bytes=_int(env, "BLENDMESH_MAX_BODY_BYTES", 1024 * 1024),
            max_upload_bytes=_int(env, "BLENDMESH_MAX_UPLOAD_BYTES", DEFAULT_MAX_UPLOAD_BYTES),
            replicas=_replicas(env),
            previews=_flag(env, "BLENDMESH_PREVIEWS")
            if env.get("BLENDMESH_PREVIEWS", "").strip()
            else True,
            bridge_idle=_seconds_or_never(env, "BLENDMESH_BRIDGE_IDLE", 120.0),
            catalog_wait=_catalog_wait(env),
            start_wait=_float(env, "BLENDMESH_START_WAIT", READY_WAIT),
            keep_revisions=_int(env, "BLENDMESH_KEEP_REVISIONS", 50),
            chunk_grace=_float(env, "BLENDMESH_CHUNK_GRACE", 3600.0),
            result_ttl=_float(env, "BLENDMESH_RESULT_TTL", 7 * 24 * 3600.0),
            upload_ttl=_float(env, "BLENDMESH_UPLOAD_TTL", 24 * 3600.0),
            gc_interval=_float(env, "BLENDMESH_GC_INTERVAL", 3600.0),
            metrics_port=_port(env, "BLENDMESH_METRICS_PORT"),
            metrics_host=env.get("BLENDMESH_METRICS_HOST", "").strip() or "127.0.0.1",
            metrics_token=env.get("BLENDMESH_METRICS_TOKEN", "").strip() or None,
            allow_unsafe_ops=_flag(env, "BLENDMESH_ALLOW_UNSAFE_OPS"),
            env=dict(env),
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
