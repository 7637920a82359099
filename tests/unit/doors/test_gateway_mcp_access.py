"""Which Host and Origin headers ``/mcp`` answers: the gateway's own address, its loopback
names at that port, and what BLENDMESH_MCP_ALLOWED_HOSTS/_ORIGINS add."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.doors.gateway.mcp import extra_hosts, extra_origins, served
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings, SettingsError

HOSTS = "BLENDMESH_MCP_ALLOWED_HOSTS"
ORIGINS = "BLENDMESH_MCP_ALLOWED_ORIGINS"


def test_served_when_bound_allows_its_address_and_loopback_names_at_its_port() -> None:
    hosts, origins = served("127.0.0.1", 8000)
    assert hosts == ["127.0.0.1:8000", "localhost:8000", "[::1]:8000"]
    assert origins == ["http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"]
    assert served("10.0.0.5", 9)[0][0] == "10.0.0.5:9"
    assert served("::1", 9)[0] == ["[::1]:9", "localhost:9", "127.0.0.1:9"]


def test_mcp_allowed_when_listed_are_taken_without_blanks() -> None:
    env = {HOSTS: " blend.example.com , blend.example.com:8443,,", ORIGINS: "https://b.io:*"}
    assert extra_hosts(env) == ["blend.example.com", "blend.example.com:8443"]
    assert extra_origins(env) == ["https://b.io:*"]
    assert extra_hosts({}) == extra_origins({}) == []


@pytest.mark.parametrize("value", ["https://blend.example.com", "blend.example.com/mcp", "a b"])
def test_mcp_hosts_when_not_a_host_names_the_setting(value: str) -> None:
    with pytest.raises(SettingsError, match=HOSTS):
        extra_hosts({HOSTS: value})


@pytest.mark.parametrize(
    "value", ["blend.example.com", "https://blend.example.com/", "ftp://b.io", "https://"]
)
def test_mcp_origins_when_not_an_origin_names_the_setting(value: str) -> None:
    with pytest.raises(SettingsError, match=ORIGINS):
        extra_origins({ORIGINS: value})


def test_gateway_when_allowed_hosts_malformed_refuses_to_start(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, env={HOSTS: "http://blend.example.com"})
    with pytest.raises(SettingsError, match=HOSTS):
        create_app(settings, cast(Bus, None), Tokens({}))
