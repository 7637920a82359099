"""The add-on's HTTP client against answers no gateway should send: over its limits, not
JSON, a run stream that ends without a result. A small local HTTP server plays the
misbehaving gateway."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from blendmesh_addon import gateway
from blendmesh_addon.gateway import Gateway, GatewayError

ANSWERS: dict[str, bytes] = {
    "/api/me": b"[1, 2]",
    "/api/runs": b"<html>proxy error</html>",
    "/api/scenes/big.blend": b"x" * 4096,
    "/api/agent/approvals/pending": b'{"approvals": [' + b'{"a": 1},' * 1000 + b'{"a": 1}]}',
    "/api/agent/run/stream": b'{"type": "delta", "delta": "planning"}\n',
}


class Handler(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        body = ANSWERS[self.path.split("?")[0]]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_answer_when_json_but_not_an_object_is_refused(url: str) -> None:
    with pytest.raises(GatewayError, match="JSON that is not an object"):
        Gateway(url, "t").me()


def test_answer_when_not_json_is_refused(url: str) -> None:
    with pytest.raises(GatewayError, match="not JSON"):
        Gateway(url, "t").runs()


def test_answer_when_over_the_json_limit_is_not_read_further(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway, "MAX_JSON_BYTES", 1024)
    monkeypatch.setattr(gateway, "CHUNK", 256)
    with pytest.raises(GatewayError, match="the answer is over"):
        Gateway(url, "t").pending()


def test_blend_when_over_its_limit_is_not_read_further(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway, "MAX_BLEND_BYTES", 1024)
    monkeypatch.setattr(gateway, "CHUNK", 256)
    with pytest.raises(GatewayError, match=r"the scene's \.blend is over 1024 bytes"):
        Gateway(url, "t").blend("big")


def test_run_stream_when_it_ends_without_a_result_says_so(url: str) -> None:
    seen: list[str] = []
    with pytest.raises(GatewayError, match="without a result"):
        Gateway(url, "t").run("room", "add a cube", seen.append)
    assert seen == ["planning"]


def test_run_stream_when_a_line_is_over_the_limit_is_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gateway, "MAX_LINE_BYTES", 10)
    with pytest.raises(GatewayError, match="progress line over"):
        Gateway(url, "t").run("room", "add a cube", lambda line: None)
