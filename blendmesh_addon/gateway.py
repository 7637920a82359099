"""The blendmesh gateway over HTTP, with the standard library only.

Blender's own Python has neither msgspec nor nats-py, so the add-on speaks to the mesh
as the artist through the gateway (docs/http-api.md) with the artist's bearer token.
Every call blocks: the add-on makes them on its worker thread, never on Blender's.
Every failure is a ``GatewayError`` whose text says what went wrong and what to do; no
answer is read past a limit.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from . import chunks

MAX_JSON_BYTES = 16 * 1024 * 1024  # a run answer lists at most 500 operations
MAX_BLEND_BYTES = 1024 * 1024 * 1024  # a pulled revision
MAX_LINE_BYTES = 1024 * 1024  # one line of a streamed run
SCENE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
RUN_ID = SCENE_ID  # the gateway's pattern for both
CHUNK = 1024 * 1024
MIB = 1024 * 1024
# A push by changed chunks: contracts/pushed_chunks.py's limits (the add-on imports
# nothing of the mesh; a unit test holds the two equal).
MAX_CHUNKS = 8192
MAX_BATCH_BYTES = 16 * 1024 * 1024
FRAME = 4


class GatewayError(Exception):
    """A request that got no usable answer; ``str()`` is safe to show the artist."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def check_scene_id(scene_id: str) -> str:
    if not SCENE_ID.fullmatch(scene_id):  # not match: "$" lets a final newline through
        raise GatewayError(
            f"scene id {scene_id[:40]!r} is not 1-128 letters, digits, '_' or '-': "
            "change it in the blendmesh panel"
        )
    return scene_id


class Gateway:
    """One gateway at ``url`` as the user ``token`` belongs to."""

    def __init__(self, url: str, token: str, timeout: float = 30.0) -> None:
        url = url.strip().rstrip("/")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GatewayError(
                f"gateway URL {url[:80]!r} is not http(s)://host:port: set it in the "
                "add-on's preferences (blendmesh up prints it)"
            )
        if not token.strip():
            raise GatewayError(
                "no token is set: put yours (a BLENDMESH_API_TOKENS entry) in the add-on's "
                "preferences"
            )
        self.url, self._token, self.timeout = url, token.strip(), timeout
        self.sent = 0  # bytes of request bodies sent since the last import began

    def token_hash(self) -> str:
        """Which token this is, without keeping it twice."""
        return hashlib.sha256(self._token.encode()).hexdigest()[:16]

    # -- routes ----------------------------------------------------------------------

    def me(self) -> dict[str, Any]:
        return self._json("GET", "/api/me")

    def import_blend(self, scene_id: str, data: bytes) -> tuple[int, dict[str, Any]]:
        """The open file as the scene's next revision: 200 ran, 202 waits for approval.
        Only the chunks the mesh lacks travel (``push_chunks``); ``sent`` says how many
        bytes did.

        Asked first who the token is and how large a body the gateway takes: a gateway
        refuses a wrong token or a body too large before reading it and closes the
        connection mid-send, which would read as a gateway that cannot be reached."""
        check_scene_id(scene_id)
        self.sent = 0
        limit = self.me().get("maxUploadBytes")
        if isinstance(limit, int) and len(data) > limit:
            raise GatewayError(
                f"the open file is {len(data) / MIB:.1f} MiB, more than the "
                f"{limit / MIB:.1f} MiB the gateway takes (BLENDMESH_MAX_UPLOAD_BYTES on "
                "the mesh); nothing was sent",
                413,
            )
        cut = chunks.cut(data)
        if len(cut.chunks) > MAX_CHUNKS:  # more than a manifest may name: sent whole
            return self._import_whole(scene_id, data)
        try:
            lacking = self._missing(cut)
        except GatewayError as exc:
            if exc.status != 404:
                raise
            return self._import_whole(scene_id, data)  # a gateway without the chunk routes
        return self.push_chunks(scene_id, data, cut, lacking)

    def push_chunks(
        self, scene_id: str, data: bytes, cut: chunks.Cut, lacking: set[str]
    ) -> tuple[int, dict[str, Any]]:
        """Send the chunks of ``cut`` the user's store lacks (``lacking``, as the gateway
        said), then import the file they spell (docs/http-api.md, "A push by changed
        chunks")."""
        path = f"/api/scenes/{check_scene_id(scene_id)}/import/chunks"
        manifest = {
            "bytes": cut.size,
            "sha256": cut.sha256,
            "chunks": [{"sha256": c.sha256, "size": c.size} for c in cut.chunks],
        }
        self._send(data, cut, lacking)
        try:
            return self._post_json(path, manifest, long=True)
        except GatewayError as exc:
            if exc.status != 409:
                raise
        # A chunk found a moment ago expired since: the gateway said so; ask again, once.
        self._send(data, cut, self._missing(cut))
        return self._post_json(path, manifest, long=True)

    def _missing(self, cut: chunks.Cut) -> set[str]:
        names = [c.sha256 for c in cut.chunks]
        return set(self._post_json("/api/uploads/chunks/missing", {"chunks": names})[1]["missing"])

    def _send(self, data: bytes, cut: chunks.Cut, lacking: set[str]) -> None:
        batch: list[bytes] = []
        size = 0
        for c in cut.chunks:
            if c.sha256 not in lacking:
                continue
            lacking.discard(c.sha256)  # a chunk the file holds twice travels once
            if size + c.size + FRAME > MAX_BATCH_BYTES:
                self._send_batch(batch)
                batch, size = [], 0
            batch.append(data[c.offset : c.offset + c.size])
            size += c.size + FRAME
        if batch:
            self._send_batch(batch)

    def _send_batch(self, batch: list[bytes]) -> None:
        body = b"".join(len(c).to_bytes(FRAME, "big") + c for c in batch)
        self._call("POST", "/api/uploads/chunks", body, "application/octet-stream", True)

    def _import_whole(
        self, scene_id: str, data: bytes, libraries: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        path = f"/api/scenes/{check_scene_id(scene_id)}/import"
        if libraries:
            query = [("library", f"{name}={blob}") for name, blob in sorted(libraries.items())]
            path += "?" + urllib.parse.urlencode(query)
        return self._call("POST", path, data, "application/octet-stream", long=True)

    def stage(self, data: bytes) -> str:
        """Stage ``data`` for the artist (``POST /api/uploads``); the blob that names it."""
        _, answer = self._call("POST", "/api/uploads", data, "application/octet-stream", True)
        blob = answer.get("blob")
        if not isinstance(blob, str):
            raise GatewayError("the gateway staged the file but named no blob for it")
        return blob

    def import_shot(
        self, scene_id: str, data: bytes, libraries: dict[str, bytes]
    ) -> tuple[int, dict[str, Any]]:
        """A shot that links ``libraries`` (name -> the .blend's bytes) as the scene's next
        revision, each library staged first and named on the import; sent whole, as the
        import by chunks names no libraries."""
        check_scene_id(scene_id)
        self.sent = 0
        staged = {name: self.stage(library) for name, library in sorted(libraries.items())}
        return self._import_whole(scene_id, data, staged)

    def run(
        self,
        scene_id: str,
        prompt: str,
        progress: Callable[[str], None],
        focus: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A request for the scene, followed line by line; the run response at its end.
        ``focus`` is the session's selection ({selected, active}), for "it" and "this"."""
        asked: dict[str, Any] = {"prompt": prompt, "sceneId": check_scene_id(scene_id)}
        if focus is not None:
            asked["focus"] = focus
        body = json.dumps(asked).encode()
        with self._open("POST", "/api/agent/run/stream", body, "application/json", True) as r:
            while True:
                line = r.readline(MAX_LINE_BYTES + 1)
                if not line:
                    raise GatewayError("the gateway ended the run's stream without a result")
                if len(line) > MAX_LINE_BYTES:
                    raise GatewayError("the gateway sent a progress line over 1 MiB")
                item = _decode(line)
                kind = item.get("type")
                if kind == "delta":
                    progress(str(item.get("delta", "")))
                elif kind == "status":
                    progress(f"{item.get('status', '')} (run {item.get('runId', '?')})")
                elif kind == "result":
                    result: dict[str, Any] = item["result"]
                    return result
                elif kind == "error":
                    raise GatewayError(str(item.get("error", "the run failed")))

    def pending(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/agent/approvals/pending")["approvals"])

    def resolve(self, approval: dict[str, Any], decision: str) -> dict[str, Any]:
        """Approve (quoting every trusted step's code hash the artist was shown) or reject."""
        body = {
            "approvalId": approval["approvalId"],
            "decision": decision,
            "requestHash": approval["requestHash"],
            "codeSha256": list(approval.get("codeSha256") or []) if decision != "reject" else [],
        }
        data = json.dumps(body).encode()
        return self._call("POST", "/api/agent/approvals/resolve", data, "application/json", True)[1]

    def cancel(self, run_id: str, reason: str = "") -> dict[str, Any]:
        """Cancel the run; its answer once it ended (failed RUN_CANCELLED, or why not)."""
        if not RUN_ID.fullmatch(run_id):
            raise GatewayError(f"run id {run_id[:40]!r} is not 1-128 letters, digits, '_' or '-'")
        data = json.dumps({"reason": reason[:500]}).encode()
        path = f"/api/runs/{run_id}/cancel"
        return self._call("POST", path, data, "application/json", True)[1]

    def operations(self, run_id: str) -> dict[str, Any]:
        """A run's last plan as it ran, in order: what the session replays."""
        if not RUN_ID.fullmatch(run_id):
            raise GatewayError(f"run id {run_id[:40]!r} is not 1-128 letters, digits, '_' or '-'")
        return self._json("GET", f"/api/runs/{run_id}/operations")

    def summary(self, scene_id: str) -> dict[str, Any]:
        """What the scene's head revision holds, object by object."""
        return self._json("GET", f"/api/scenes/{check_scene_id(scene_id)}")

    def history(self, scene_id: str, limit: int = 20) -> list[dict[str, Any]]:
        path = f"/api/scenes/{check_scene_id(scene_id)}/history?limit={int(limit)}"
        return list(self._json("GET", path)["revisions"])

    def changes(self, scene_id: str, revision: int) -> dict[str, Any]:
        """What ``revision`` changed against the one before it, with its reviews."""
        path = f"/api/scenes/{check_scene_id(scene_id)}/changes?revision={int(revision)}"
        return self._json("GET", path)

    def lock(self, scene_id: str, ttl: float = 3600.0, note: str = "") -> dict[str, Any]:
        """Lock the scene for this open session: other users' runs on it are refused until
        it is released, broken by a lead, or ``ttl`` seconds pass (docs/studio.md)."""
        body = {"ttlSeconds": ttl, "note": note[:200], "heldBy": "session"}
        path = f"/api/scenes/{check_scene_id(scene_id)}/lock"
        return dict(self._post_json(path, body)[1]["lock"])

    def unlock(self, scene_id: str) -> None:
        """Release the lock this artist holds on the scene."""
        self._json("DELETE", f"/api/scenes/{check_scene_id(scene_id)}/lock")

    def runs(self) -> list[dict[str, Any]]:
        return list(self._json("GET", "/api/runs")["runs"])

    def blend(self, scene_id: str) -> tuple[bytes, str]:
        """The scene's head revision and its scene hash (the answer's ETag)."""
        path = f"/api/scenes/{check_scene_id(scene_id)}.blend"
        with self._open("GET", path, None, None, True) as r:
            data = _read(r, MAX_BLEND_BYTES, "the scene's .blend")
            return data, (r.headers.get("ETag") or "").strip('"')

    # -- plumbing --------------------------------------------------------------------

    def _json(self, method: str, path: str) -> dict[str, Any]:
        return self._call(method, path, None, None, False)[1]

    def _post_json(
        self, path: str, body: dict[str, Any], long: bool = False
    ) -> tuple[int, dict[str, Any]]:
        return self._call("POST", path, json.dumps(body).encode(), "application/json", long)

    def _call(
        self, method: str, path: str, body: bytes | None, kind: str | None, long: bool
    ) -> tuple[int, dict[str, Any]]:
        with self._open(method, path, body, kind, long) as r:
            return r.status, _decode(_read(r, MAX_JSON_BYTES, "the answer"))

    def _open(
        self, method: str, path: str, body: bytes | None, kind: str | None, long: bool
    ) -> Any:
        request = urllib.request.Request(self.url + path, data=body, method=method)
        self.sent += len(body or b"")
        request.add_header("Authorization", f"Bearer {self._token}")
        request.add_header("Accept", "application/json")
        if kind:
            request.add_header("Content-Type", kind)
        # A run waits for the mesh (up to the gateway's own 600 s); reads answer at once.
        timeout = max(self.timeout, 660.0) if long else self.timeout
        try:
            return urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            raise _refused(exc, self.url) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, socket.timeout | TimeoutError):
                why = f"no answer within {timeout:g} s"
            else:
                why = getattr(reason, "strerror", None) or str(reason)
            raise GatewayError(
                f"cannot reach the blendmesh gateway at {self.url} ({why}): start it with "
                "`blendmesh up`, or fix the URL in the add-on's preferences"
            ) from None


def _read(response: Any, limit: int, what: str) -> bytes:
    data = bytearray()
    while chunk := response.read(CHUNK):
        data += chunk
        if len(data) > limit:
            size = f"{limit // MIB} MiB" if limit >= MIB else f"{limit} bytes"
            raise GatewayError(f"{what} is over {size}; not read further")
    return bytes(data)


def _decode(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise GatewayError("the gateway answered something that is not JSON") from None
    if not isinstance(value, dict):
        raise GatewayError("the gateway answered JSON that is not an object")
    return value


def _refused(exc: urllib.error.HTTPError, url: str) -> GatewayError:
    """An error answer as the artist should read it: the gateway's own safe message."""
    try:
        message = str(_decode(exc.read(MAX_JSON_BYTES))["error"]["message"])
    except (GatewayError, KeyError, TypeError, OSError):
        message = exc.reason if isinstance(exc.reason, str) else "no reason given"
    if exc.code == 401:
        return GatewayError(
            f"the gateway at {url} refused the token ({message}): put your token (a "
            "BLENDMESH_API_TOKENS entry) in the add-on's preferences",
            401,
        )
    return GatewayError(f"{message} (HTTP {exc.code})", exc.code)
