"""A local HTTP server that speaks the Gemini API's generateContent wire format.

The real google-genai client is pointed at it through its base URL option. Answers are
scripted in order (plans, malformed text, HTTP errors with google.rpc bodies, safety
blocks) and every request body is recorded, so tests can check what the SDK sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PATH = re.compile(r"^/(v1|v1beta)/models/([^/:]+):generateContent$")


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Recorded:
    path: str
    model: str
    api_key: str | None
    body: dict[str, Any]

    @property
    def text(self) -> str:
        """The whole request body as JSON text, for "was it sent" assertions."""
        return json.dumps(self.body, ensure_ascii=False)

    @property
    def turns(self) -> list[str]:
        return [p.get("text", "") for c in self.body.get("contents", []) for p in c["parts"]]

    @property
    def system(self) -> str:
        parts = self.body.get("systemInstruction", {}).get("parts", [])
        return "".join(p.get("text", "") for p in parts)


def answer(text: str, finish: str = "STOP", model: str | None = None) -> Reply:
    """A candidate whose single text part is ``text``."""
    body: dict[str, Any] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": finish,
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }
    if model is not None:
        body["modelVersion"] = model
    return Reply(200, body)


def plan(*operations: dict[str, Any], request_id: str = "from-the-model") -> Reply:
    """A well-formed answer: operations with ``args`` are written as ``args_json``."""
    ops = []
    for op in operations:
        wire = {k: v for k, v in op.items() if k != "args"}
        wire["args_json"] = json.dumps(op.get("args", {}))
        ops.append(wire)
    return answer(json.dumps({"request_id": request_id, "operations": ops}))


def op(
    op_id: str, tool: str, args: dict[str, Any], deps: list[str] | None = None, level: str = ""
) -> dict[str, Any]:
    default = "read_only" if tool == "scene.snapshot" else "safe_write"
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": deps or [],
        "safety_level": level or default,
    }


def error(code: int, status: str, message: str, retry_delay: str | None = None) -> Reply:
    """An HTTP error with the google.rpc.Status body the API sends."""
    details: list[dict[str, Any]] = []
    if retry_delay is not None:
        info = "type.googleapis.com/google.rpc.RetryInfo"
        details.append({"@type": info, "retryDelay": retry_delay})
    body = {"code": code, "message": message, "status": status, "details": details}
    return Reply(code, {"error": body})


def safety_blocked() -> Reply:
    """A candidate stopped by the safety filters: no content, finishReason SAFETY."""
    rating = {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    candidate = {"finishReason": "SAFETY", "index": 0, "safetyRatings": [rating]}
    return Reply(200, {"candidates": [candidate]})


def prompt_blocked(reason: str = "SAFETY") -> Reply:
    return Reply(200, {"promptFeedback": {"blockReason": reason}})


@dataclass
class FakeGemini:
    """Scripted replies in order; with none left it answers 500 so a test fails loudly."""

    replies: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    model_version: str | None = None  # modelVersion when a reply sets none; None: the model
    # While set to an unset Event, each request waits for it (at most 30 s) before its
    # reply: a model that is still thinking.
    hold: threading.Event | None = None
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.clear()
            self.replies.extend(replies)
            self.requests.clear()

    def _next(self, model: str) -> Reply:
        with self._lock:
            reply = self.replies.popleft() if self.replies else None
        if reply is None:
            return error(500, "INTERNAL", "the fake has no scripted reply left")
        if reply.status == 200 and "candidates" in reply.body and "modelVersion" not in reply.body:
            return Reply(200, {**reply.body, "modelVersion": self.model_version or model})
        return reply

    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                match = _PATH.match(self.path.split("?")[0])
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if match is None:
                    self._send(error(404, "NOT_FOUND", f"no route {self.path}"))
                    return
                body = json.loads(raw or b"{}")
                with fake._lock:
                    fake.requests.append(
                        Recorded(self.path, match[2], self.headers.get("x-goog-api-key"), body)
                    )
                if fake.hold is not None:
                    fake.hold.wait(30)
                self._send(fake._next(match[2]))

            def _send(self, reply: Reply) -> None:
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None


@contextmanager
def running() -> Iterator[FakeGemini]:
    fake = FakeGemini()
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
