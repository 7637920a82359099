"""Warm, one-shot sandboxed Blenders for PYTHON steps, as the bridge sees them.

Starting Blender in the sandbox takes about half a second, far above a step's budget, so
one sandboxed process is started ahead of need: it imports bpy and waits. A step takes
it (``Pool.slot``), uses it once, and it is killed and its folder removed whatever
happened; the next one is started right away. No state of one step can reach another.

The first use checks that the sandbox can be set up at all (bubblewrap present, the
blendmesh home out of its sight, a trial run); when it cannot, every step is refused
with ``SandboxUnavailable`` and nothing runs unconfined.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts.python_steps import KILL_GRACE_MS, SCENE_IO_MS

from . import box, seccomp

PACKAGE = str(Path(__file__).resolve().parent)
START_SECONDS = 60.0  # a cold start on a busy machine; measured at about 0.6 s idle
MAX_REPLY_BYTES = 2 * 1024 * 1024  # 64 KiB of output, JSON-escaped, with room to spare
STDERR_TAIL = 600
RUNNING = b'{"running": true}'  # what child.py says as the code starts
RAN = b'{"ran": true}'  # and as it has finished


@dataclass(frozen=True)
class Answer:
    """What the sandboxed step said, or what the bridge saw happen to it.

    ``kind`` on failure: compile, error, refused, sandbox, memory, output, timeout,
    forbidden (a system call the sandbox kills for) or crashed."""

    ok: bool
    kind: str = ""
    message: str = ""
    output: str = ""
    wrote: bool = False


def _signal_answer(returncode: int, killed: bool, timeout_ms: int) -> Answer:
    """Why a sandboxed step ended without answering, from how its process ended."""
    late = f"the step ran longer than its timeout_ms={timeout_ms} and was stopped"
    # bwrap exits with 128 + the signal that ended the process it ran.
    sig = returncode - 128 if returncode > 128 else -returncode
    if killed or sig in (signal.SIGALRM, signal.SIGXCPU, signal.SIGKILL):
        return Answer(ok=False, kind="timeout", message=late)
    if sig == signal.SIGSYS:
        return Answer(ok=False, kind="forbidden",
                      message="the step made a system call the sandbox forbids")  # fmt: skip
    return Answer(
        ok=False,
        kind="crashed",
        message=f"the sandboxed Blender ended without an answer (exit status {returncode})",
    )


class Warm:
    """One sandboxed Blender, started and (once ``ready``) waiting for its job."""

    def __init__(self, layout: box.Layout, folder: Path) -> None:
        self.folder = folder
        self.workdir = folder / "work"
        read_fd, write_fd = os.pipe()
        try:
            os.write(write_fd, seccomp.no_new_processes())
            os.close(write_fd)
            with open(folder / "stderr", "wb") as stderr:
                self.proc = subprocess.Popen(
                    box.argv(layout, read_fd, ["sandbox.child"]),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=stderr,
                    pass_fds=(read_fd,),
                    # Its own process group, killed as one. No preexec_fn: bwrap's own
                    # --die-with-parent ends the sandbox with the bridge, and without one
                    # the bridge's large address space is not copied by fork (vfork is used).
                    start_new_session=True,
                )
        finally:
            os.close(read_fd)
        self._buffer = b""
        self.ready = False

    @property
    def in_path(self) -> str:
        return str(self.workdir / "in.blend")

    @property
    def out_path(self) -> str:
        return str(self.workdir / "out.blend")

    def _line(self, deadline: float) -> bytes | None:
        """The next line from the child, or None at EOF, the deadline or the size bound."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or len(self._buffer) > MAX_REPLY_BYTES or not sel.select(left):
                    return None
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def wait_ready(self) -> None:
        """Block until the child has imported bpy; SandboxUnavailable when it cannot."""
        if self.ready:
            return
        line = self._line(time.monotonic() + START_SECONDS)
        if line is None or json.loads(line) != {"ready": True}:
            self.kill()
            raise box.SandboxUnavailable(
                f"{box.REFUSAL} (the sandboxed Blender did not start: {self.stderr_tail()})"
            )
        self.ready = True

    def run(self, job: dict[str, Any]) -> Answer:
        """Hand the child its one job and wait for the answer, killing it at the deadline."""
        self.wait_ready()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job).encode() + b"\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it died; its exit status says why
        line = self._answer_line(job["timeout_ms"])
        killed = False
        if line is None and self.proc.poll() is None:
            self.kill()
            killed = True
        if line is not None:
            try:
                reply = json.loads(line)
                return Answer(
                    ok=reply["ok"] is True,
                    kind=str(reply.get("kind", "")),
                    message=str(reply.get("message", "")),
                    output=str(reply.get("output", "")),
                    wrote=reply.get("wrote") is True,
                )
            except (ValueError, KeyError, TypeError, AttributeError):
                return Answer(ok=False, kind="crashed", message="the answer was not JSON")
        returncode = self.proc.wait()
        return _signal_answer(returncode, killed, job["timeout_ms"])

    def _answer_line(self, timeout_ms: int) -> bytes | None:
        """The child's final answer, or None when it died or a phase overran its budget:
        opening the scene, then the code itself (timeout_ms and a grace), then saving."""
        phases = ((RUNNING, SCENE_IO_MS), (RAN, timeout_ms + KILL_GRACE_MS), (None, SCENE_IO_MS))
        for marker, budget_ms in phases:
            line = self._line(time.monotonic() + budget_ms / 1000)
            if line is None or line != marker:
                return line
        return None

    def stderr_tail(self) -> str:
        try:
            text = (self.folder / "stderr").read_bytes()[-STDERR_TAIL:]
        except OSError:
            return "no message"
        return text.decode(errors="replace").strip() or "no message"

    def stop(self) -> None:
        """Send SIGKILL to the process group (bwrap and all inside it), without waiting."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        """End the process group and reap it."""
        self.stop()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def dispose(self) -> None:
        self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)


class Pool:
    """At most one warm sandboxed Blender, started on first use and after every step."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._layout: box.Layout | None = None
        self._root: Path | None = None
        self._warm: Warm | None = None
        self._retired: list[Warm] = []
        self._count = 0

    def secrets(self) -> list[Path]:
        """What the sandbox must never see: the blendmesh home and the NATS credentials."""
        found = [Path(self.env.get("BLENDMESH_HOME") or "var").absolute()]
        if self.env.get("BLENDMESH_NATS_CREDENTIALS"):
            found.append(Path(self.env["BLENDMESH_NATS_CREDENTIALS"]).absolute())
        return found

    def check(self) -> str | None:
        """None when Python steps can run here, else why not (the bridge's profile says
        so, and the executor refuses such plans before anything runs)."""
        try:
            self._ensure_layout()
        except box.SandboxUnavailable as exc:
            return str(exc)
        return None

    def _folder(self) -> Path:
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="blendmesh-python-"))
        self._count += 1
        folder = self._root / str(self._count)
        (folder / "work").mkdir(parents=True)
        return folder

    def _ensure_layout(self) -> box.Layout:
        if self._layout is not None:
            return self._layout
        bwrap = box.find_bwrap(self.env)
        folder = self._folder()
        layout = box.Layout(
            bwrap=bwrap,
            python=sys.executable,
            runtimes=tuple(dict.fromkeys((sys.base_prefix, sys.prefix))),
            package=PACKAGE,
            workdir=str(folder / "work"),
            root_links=box.root_links(),
        )
        try:
            box.check_secrets(layout, self.secrets())
            box.probe(layout, seccomp.no_new_processes())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        self._layout = layout
        return layout

    def _spawn(self) -> Warm:
        layout = self._ensure_layout()
        folder = self._folder()
        layout = box.Layout(**{**layout.__dict__, "workdir": str(folder / "work")})
        box.check_secrets(layout, self.secrets())
        try:
            return Warm(layout, folder)
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise box.SandboxUnavailable(f"{box.REFUSAL} (cannot start it: {exc})") from None

    @contextlib.contextmanager
    def slot(self) -> Iterator[Warm]:
        """A ready sandboxed Blender for one step; killed and removed afterwards, and the
        next one started. SandboxUnavailable when the sandbox cannot be set up."""
        self._reap()
        warm = self._warm if self._warm is not None else self._spawn()
        self._warm = None
        try:
            warm.wait_ready()
            yield warm
        finally:
            warm.stop()
            self._retired.append(warm)
            with contextlib.suppress(box.SandboxUnavailable):
                self._warm = self._spawn()

    def _reap(self) -> None:
        # Reaped and removed one step later, off the step's own time: a stopped Blender
        # takes some milliseconds to release its memory and exit.
        for warm in self._retired:
            warm.dispose()
        self._retired.clear()

    def close(self) -> None:
        """Kill the warm process and remove every folder (bridge shutdown)."""
        self._reap()
        if self._warm is not None:
            self._warm.dispose()
            self._warm = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
