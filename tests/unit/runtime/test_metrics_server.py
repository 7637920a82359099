"""``/metrics`` of a service run as a process of its own: what a hostile or careless client
gets (a huge head, a slow one, another path or method, no or a wrong token), and the
series once it asks properly."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest

from services.runtime.service import metrics
from services.runtime.service.metrics_server import (
    MAX_HEAD,
    MetricsServer,
    authorized,
    serve_metrics,
)
from services.runtime.service.settings import Settings, SettingsError


@pytest.fixture
async def server() -> AsyncIterator[MetricsServer]:
    served = MetricsServer("127.0.0.1", 0, token="s3cret")
    await served.start()
    try:
        yield served
    finally:
        await served.stop()


async def ask(server: MetricsServer, request: bytes) -> tuple[str, bytes]:
    """Send raw bytes; the status line and the body that came back."""
    port = int(server.url.rsplit(":", 1)[1].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), body


async def test_metrics_when_head_is_larger_than_the_limit_answers_400(
    server: MetricsServer,
) -> None:
    huge = b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * (MAX_HEAD * 4) + b"\r\n\r\n"
    status, body = await ask(server, huge)
    assert status == "HTTP/1.1 400 Bad Request"
    assert b"GET /metrics" in body


async def test_metrics_when_client_never_ends_its_head_closes_with_400(
    server: MetricsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("services.runtime.service.metrics_server.READ_WITHIN", 0.2)
    status, _ = await ask(server, b"GET /metrics HTTP/1.1\r\n")
    assert status == "HTTP/1.1 400 Bad Request"


async def test_metrics_when_path_is_another_answers_404(server: MetricsServer) -> None:
    status, body = await ask(server, b"GET /admin HTTP/1.1\r\n\r\n")
    assert status == "HTTP/1.1 404 Not Found"
    assert b"/metrics" in body


async def test_metrics_when_method_is_post_answers_405(server: MetricsServer) -> None:
    status, _ = await ask(server, b"POST /metrics HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n")
    assert status == "HTTP/1.1 405 Method Not Allowed"


@pytest.mark.parametrize(
    "authorization",
    ["", "Authorization: Bearer nope\r\n", "Authorization: Basic s3cret\r\n",
     "Authorization: Bearer s3cret-and-more\r\n", "Authorization: s3cret\r\n"],
)  # fmt: skip
async def test_metrics_when_token_is_missing_or_wrong_answers_401(
    server: MetricsServer, authorization: str
) -> None:
    request = f"GET /metrics HTTP/1.1\r\n{authorization}\r\n".encode()
    status, body = await ask(server, request)
    assert status == "HTTP/1.1 401 Unauthorized"
    assert b"blendmesh_" not in body
    assert b"BLENDMESH_METRICS_TOKEN" in body


async def test_metrics_when_token_is_right_answers_the_series(server: MetricsServer) -> None:
    metrics.bridge_restarted("preview")
    status, body = await ask(
        server, b"GET /metrics?x=1 HTTP/1.1\r\nauthorization: bearer s3cret\r\n\r\n"
    )
    assert status == "HTTP/1.1 200 OK"
    assert b'blendmesh_bridge_restarts_total{bridge="preview"}' in body


async def test_serve_metrics_when_port_is_taken_names_the_setting(tmp_path: object) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = Settings(home=tmp_path, metrics_port=port)  # type: ignore[arg-type]
        with pytest.raises(SettingsError, match="BLENDMESH_METRICS_PORT"):
            await serve_metrics(settings)


async def test_serve_metrics_when_port_unset_serves_nothing(tmp_path: object) -> None:
    assert await serve_metrics(Settings(home=tmp_path)) is None  # type: ignore[arg-type]


def test_authorized_when_no_token_configured_lets_anyone_in() -> None:
    assert authorized(None, None)
    assert authorized("Bearer anything", None)
    assert not authorized(None, "t")


@pytest.mark.parametrize("raw", ["-1", "65536", "80a", " 9x", "1e3"])
def test_settings_when_metrics_port_is_not_a_port_names_it(raw: str) -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_METRICS_PORT"):
        Settings.from_env({"BLENDMESH_METRICS_PORT": raw})


def test_settings_when_metrics_token_set_keeps_it_out_of_repr() -> None:
    settings = Settings.from_env(
        {"BLENDMESH_METRICS_TOKEN": "s3cret", "BLENDMESH_METRICS_PORT": "0"}
    )
    assert settings.metrics_token == "s3cret"
    assert settings.metrics_port == 0
    assert "s3cret" not in repr(settings)
