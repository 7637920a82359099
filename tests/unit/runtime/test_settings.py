"""Settings from the environment: defaults, and a clear error for each bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.runtime.service.settings import Settings, SettingsError


def test_settings_when_env_empty_uses_defaults() -> None:
    s = Settings.from_env({})
    assert s.home == Path("var").absolute() and s.nats_url is None
    assert s.prefix == "blendmesh" and s.planner is None and s.max_deliver == 5
    assert s.trace_exporter == "none"


@pytest.mark.parametrize("exporter", ["none", "console", "otlp"])
def test_settings_when_trace_set_reads_exporter(exporter: str) -> None:
    assert Settings.from_env({"BLENDMESH_TRACE": exporter}).trace_exporter == exporter


@pytest.mark.parametrize(("raw", "idle"), [(None, 120.0), ("", 120.0), ("30", 30.0), ("0", None)])
def test_settings_when_bridge_idle_set_reads_seconds_or_never(
    raw: str | None, idle: float | None
) -> None:
    env = {} if raw is None else {"BLENDMESH_BRIDGE_IDLE": raw}
    assert Settings.from_env(env).bridge_idle == idle


@pytest.mark.parametrize(("raw", "on"), [(None, True), ("", True), ("1", True), ("0", False)])
def test_settings_when_previews_set_reads_whether_to_render(raw: str | None, on: bool) -> None:
    env = {} if raw is None else {"BLENDMESH_PREVIEWS": raw}
    assert Settings.from_env(env).previews is on


def test_settings_when_env_set_reads_every_value() -> None:
    s = Settings.from_env(
        {
            "NATS_URL": "nats://h:1",
            "BLENDMESH_HOME": "/data",
            "BLENDMESH_USER": "ana",
            "BLENDMESH_OP_TIMEOUT": "2.5",
            "BLENDMESH_MAX_DELIVER": "3",
            "BLENDMESH_PREFIX": "studio-a",
        }
    )
    assert (s.nats_url, s.home, s.user, s.op_timeout, s.max_deliver, s.prefix) == (
        "nats://h:1",
        Path("/data"),
        "ana",
        2.5,
        3,
        "studio-a",
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BLENDMESH_PLANNER": "oracle"}, "BLENDMESH_PLANNER='oracle' is not a planner"),
        ({"BLENDMESH_OP_TIMEOUT": "soon"}, "BLENDMESH_OP_TIMEOUT='soon' is not a number"),
        ({"BLENDMESH_OP_TIMEOUT": "-1"}, "must be greater than 0"),
        ({"BLENDMESH_MAX_DELIVER": "0"}, "must be at least 1"),
        ({"BLENDMESH_MAX_DELIVER": "x"}, "is not a whole number"),
        ({"BLENDMESH_PREFIX": "a.b"}, "BLENDMESH_PREFIX 'a.b' is not valid"),
        ({"BLENDMESH_TRACE": "jaeger"}, "BLENDMESH_TRACE='jaeger' is not a trace exporter"),
        ({"BLENDMESH_REPLICAS": "0"}, "BLENDMESH_REPLICAS='0' must be at least 1"),
        ({"BLENDMESH_REPLICAS": "7"}, "BLENDMESH_REPLICAS='7' is more copies than JetStream"),
        ({"BLENDMESH_PREVIEWS": "maybe"}, "BLENDMESH_PREVIEWS='maybe' is not a yes or no"),
        ({"BLENDMESH_START_WAIT": "soon"}, "BLENDMESH_START_WAIT='soon' is not a number"),
        ({"BLENDMESH_START_WAIT": "0"}, "BLENDMESH_START_WAIT='0' must be greater than 0"),
        ({"BLENDMESH_BRIDGE_IDLE": "soon"}, "BLENDMESH_BRIDGE_IDLE='soon' is not a number"),
        ({"BLENDMESH_BRIDGE_IDLE": "-5"}, "must be greater than 0, or 0 to never stop it"),
        ({"BLENDMESH_BRIDGES": "9"}, "BLENDMESH_BRIDGES=9 is out of range; use 1 to 8"),
        ({"BLENDMESH_BRIDGES": "many"}, "BLENDMESH_BRIDGES='many' is not a whole number"),
        ({"BLENDMESH_AUDIT_APART": "later"}, "BLENDMESH_AUDIT_APART='later' is not a yes or no"),
    ],
)
def test_settings_when_value_bad_raises_naming_it(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(".", r"\.")):
        Settings.from_env(env)


def test_settings_when_policy_env_set_reads_dir_and_ttl() -> None:
    s = Settings.from_env({"BLENDMESH_POLICY_DIR": "/rules", "BLENDMESH_APPROVAL_TTL": "90"})
    assert (s.policy_dir, s.approval_ttl) == (Path("/rules"), 90.0)
    d = Settings.from_env({})
    assert (d.policy_dir, d.approval_ttl) == (None, 3600.0)


@pytest.mark.parametrize(("raw", "replicas"), [(None, 1), ("1", 1), ("3", 3), ("5", 5)])
def test_settings_when_replicas_set_reads_copies_of_each_stream(
    raw: str | None, replicas: int
) -> None:
    env = {} if raw is None else {"BLENDMESH_REPLICAS": raw}
    assert Settings.from_env(env).replicas == replicas


@pytest.mark.parametrize(("raw", "seconds"), [(None, 60.0), ("", 60.0), ("5", 5.0), ("300", 300.0)])
def test_settings_when_start_wait_set_reads_how_long_a_start_waits_for_jetstream(
    raw: str | None, seconds: float
) -> None:
    env = {} if raw is None else {"BLENDMESH_START_WAIT": raw}
    assert Settings.from_env(env).start_wait == seconds


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("0", "BLENDMESH_CATALOG_WAIT='0' must be greater than 0"),
        ("soon", "BLENDMESH_CATALOG_WAIT='soon' is not a number"),
        ("86401", "BLENDMESH_CATALOG_WAIT=86401 is more than 86400 seconds"),
    ],
)
def test_settings_when_catalog_wait_is_out_of_range_names_it(raw: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings.from_env({"BLENDMESH_CATALOG_WAIT": raw})


def test_settings_when_catalog_wait_set_reads_seconds() -> None:
    assert Settings.from_env({}).catalog_wait == 300.0
    assert Settings.from_env({"BLENDMESH_CATALOG_WAIT": "86400"}).catalog_wait == 86400.0
