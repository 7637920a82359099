"""One warm sandboxed Blender for one PYTHON step, as the bridge sees it.

``Warm`` starts bubblewrap with the sandbox's seccomp filter and the three unnamed files
the scene crosses by (handoff.py), learns the pid namespace's init from ``--info-fd``,
holds it by a pidfd, puts it in a pids cgroup of its own (pids.py) and only then lets it
start the Python (``--block-fd``). It talks to the child (child.py) in JSON lines, times
each phase of a step, and ``kill`` ends the whole namespace and waits until the kernel
has reaped every process in it, after which the scene it handed back can be read.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import selectors
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts.python_steps import KILL_GRACE_MS, SCENE_IO_MS, THREADS

from . import box, handoff, pids, seccomp

START_SECONDS = 60.0  # a cold start on a busy machine; measured at about 0.6 s idle
MAX_REPLY_BYTES = 2 * 1024 * 1024  # 64 KiB of output, JSON-escaped, with room to spare
STDERR_TAIL = 600
REAP_SECONDS = 10.0  # a killed Blender releasing its memory; measured in milliseconds
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
    """One sandboxed Blender, started and (once ``ready``) waiting for its job.

    ``folder`` is the bridge's own: the sandbox never sees it. The scene goes in and out
    through unnamed files whose descriptors the sandbox inherits (handoff.py)."""

    def __init__(self, layout: box.Layout, folder: Path, budget_parent: Path | None) -> None:
        self.folder = folder
        self._in, self._out, self._stderr = (handoff.unnamed(folder) for _ in range(3))
        self._pidfd: int | None = None
        self._init_pid = 0
        self.budget: pids.Budget | None = None
        self._buffer = b""
        self.ready = False
        self.address_space = 0
        seccomp_r, seccomp_w = os.pipe()
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        try:
            os.write(seccomp_w, seccomp.sandbox_filter())
            os.close(seccomp_w)
            fds = box.Fds(seccomp=seccomp_r, info=info_w, block=block_r)
            self.proc = subprocess.Popen(
                box.argv(layout, fds, ["sandbox.child"]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                pass_fds=(seccomp_r, info_w, block_r, self._in.fileno(), self._out.fileno()),
                # Its own process group, killed as one. No preexec_fn: bwrap's own
                # --die-with-parent ends the sandbox with the bridge, and without one
                # the bridge's large address space is not copied by fork (vfork is used).
                start_new_session=True,
            )
        except OSError:
            for file in (self._in, self._out, self._stderr):
                file.close()
            raise
        finally:
            for fd in (seccomp_r, info_w, block_r):
                os.close(fd)
        # Admitted off the step's time: the previous step's answer is not held up while
        # bubblewrap builds the next sandbox.
        self._admit_error: BaseException | None = None
        self._admitting = threading.Thread(
            target=self._admit_then_close, args=(info_r, block_w, budget_parent), daemon=True
        )
        self._admitting.start()

    def _admit_then_close(self, info_r: int, block_w: int, budget_parent: Path | None) -> None:
        try:
            self._admit(info_r, block_w, budget_parent)
        except BaseException as exc:  # noqa: BLE001 - raised again by wait_ready
            self._admit_error = exc
        finally:
            os.close(info_r)
            os.close(block_w)

    def _admit(self, info_r: int, block_w: int, budget_parent: Path | None) -> None:
        """Learn the sandbox's first process (its pid namespace's init), hold it by a pidfd,
        put it in its own pids budget, and only then let it start the Python."""
        info = b""
        deadline = time.monotonic() + START_SECONDS
        while not info.endswith(b"}\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([info_r], [], [], max(left, 0))
            chunk = os.read(info_r, 4096) if ready else b""
            if not chunk:
                raise box.SandboxUnavailable(
                    f"{box.REFUSAL} (bubblewrap did not start: {self.stderr_tail()})"
                )
            info += chunk
        first = int(json.loads(info)["child-pid"])
        self._pidfd = os.pidfd_open(first)
        self._init_pid = first
        self.budget = pids.Budget.create(THREADS, budget_parent)
        if self.budget is not None:
            self.budget.admit(first)
        os.write(block_w, b"go")

    def _python_pid(self) -> int | None:
        """The sandboxed Python's pid on the host: the one child of the namespace's init."""
        init = self._init_pid
        try:
            with open(f"/proc/{init}/task/{init}/children", encoding="ascii") as children:
                found = children.read().split()
        except OSError:
            return None
        return int(found[0]) if len(found) == 1 else None

    def _vm_size(self) -> int:
        """The sandboxed Python's address space in bytes, which the step's budget is added
        to: read on the host, since the sandbox has no /proc of its own."""
        pid = self._python_pid()
        if pid is None:
            raise box.SandboxUnavailable(f"{box.REFUSAL} (the sandboxed Blender vanished)")
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
        return 0

    @property
    def scene_in(self) -> Path:
        """Where the bridge saves the scene the step opens (its own folder)."""
        return self.folder / "in.blend"

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
        self._admitting.join()
        if self._admit_error is not None:
            self.kill()
            if isinstance(self._admit_error, box.SandboxUnavailable):
                raise self._admit_error
            raise box.SandboxUnavailable(
                f"{box.REFUSAL} (cannot start it: {self._admit_error})"
            ) from None
        line = self._line(time.monotonic() + START_SECONDS)
        if line is None or json.loads(line) != {"ready": True}:
            self.kill()
            raise box.SandboxUnavailable(
                f"{box.REFUSAL} (the sandboxed Blender did not start: {self.stderr_tail()})"
            )
        self.address_space = self._vm_size()
        self.ready = True

    def run(self, job: dict[str, Any]) -> Answer:
        """Hand the child the scene saved at ``scene_in`` and its one job, and wait for the
        answer, killing it at the deadline."""
        self.wait_ready()
        size = handoff.fill(self._in, self.scene_in)
        self.scene_in.unlink()
        job = {**job, "in_fd": self._in.fileno(), "in_bytes": size,
               "out_fd": self._out.fileno(), "address_space": self.address_space}  # fmt: skip
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

    def take_output(self, limit: int) -> Path:
        """The scene the step handed back, copied to a file of the bridge's; only after
        ``kill``, when nothing of the step is left to change it. OutputRefused otherwise."""
        if self._pidfd is not None or self.proc.returncode is None:
            raise handoff.OutputRefused("cannot be read while the step still runs")
        return handoff.take(self._out, self.folder / "out.blend", limit)

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
            text = handoff.tail(self._stderr, STDERR_TAIL)
        except (OSError, ValueError):
            return "no message"
        return text.decode(errors="replace").strip() or "no message"

    def stop(self) -> None:
        """Send SIGKILL to the sandbox's pid namespace (through its init, held by a pidfd:
        no other process can be hit by a reused pid) and to bwrap's process group, without
        waiting."""
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        """End the sandbox and wait until every process in it is gone: the namespace's init
        exits only after the kernel has killed and reaped everything else inside."""
        self.stop()
        self._admitting.join()  # bwrap is gone, so it has learnt the pid or given up
        self.stop()
        if self._pidfd is not None:
            select.select([self._pidfd], [], [], REAP_SECONDS)
            os.close(self._pidfd)
            self._pidfd = None
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.budget is not None:
            self.budget.close()
            self.budget = None

    def dispose(self) -> None:
        self.kill()
        for file in (self._in, self._out, self._stderr):
            file.close()
        shutil.rmtree(self.folder, ignore_errors=True)
