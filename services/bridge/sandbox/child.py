"""One sandboxed Blender that runs one PYTHON step: ``python -m sandbox.child``.

Started by ``pool`` inside bubblewrap, ahead of need: it imports bpy (the slow part),
adds the seccomp filter that allows only what a step needs from then on (``execve``
not among it), writes ``{"ready": true}``
and waits for ONE job line on stdin. For the job it sets the step's rlimits, copies the
scene the bridge handed it (an inherited descriptor, ``in_fd``) to ``/sandbox/in.blend``
and opens it (scripts off), runs the code (safe: RestrictedPython against the facade;
trusted: plain Python with real bpy), saves ``/sandbox/out.blend`` when the scene may have
changed and copies it into ``out_fd``, answers one JSON line and exits, so nothing of one
step survives into the next. The bridge reads ``out_fd`` only after it has killed every
process here (handoff.py): what the step does to its own folder afterwards reaches
nothing. On the way it says ``{"running": true}`` when the code starts and
``{"ran": true}`` when it has finished, so the bridge times the code alone, not the
opening and saving of the scene.

The protocol goes to a private copy of stdout; fd 1 then points at stderr, as in the
bridge, so nothing Blender prints can corrupt the answer. A step that runs past its time
is killed by SIGALRM at its default action, which no Python code in a safe step can catch
and which also ends a step stuck inside C code.
"""

from __future__ import annotations

import os
import sys

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)

import contextlib  # noqa: E402 - must follow the fd swap above
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402
from typing import Any  # noqa: E402

import bpy  # noqa: E402

from . import facade, handoff, restricted, seccomp  # noqa: E402

IN_BLEND = "/sandbox/in.blend"
OUT_BLEND = "/sandbox/out.blend"
MAX_JOB_BYTES = 4 * 1024 * 1024  # the code is at most 200 000 characters
MIB = 1024 * 1024


class StepFailed(Exception):
    """The step did not complete: ``kind`` says how (the bridge maps it to an error code)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _limit(which: int, value: int) -> None:
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def set_limits(job: dict[str, Any]) -> None:
    """The step's rlimits; set after bpy is imported, since Blender itself reserves
    address space the step must not be charged for (``address_space``: what the bridge
    read of this process on the host, where a /proc is)."""
    cpu_seconds = math.ceil((job["timeout_ms"] + job["scene_io_ms"]) / 1000)
    _limit(resource.RLIMIT_AS, job["address_space"] + job["memory_mib"] * MIB)
    _limit(resource.RLIMIT_CPU, cpu_seconds)
    _limit(resource.RLIMIT_FSIZE, job["file_size_mib"] * MIB)
    _limit(resource.RLIMIT_NOFILE, job["open_files"])
    _limit(resource.RLIMIT_CORE, 0)
    # Not enforced where the bridge runs as root: seccomp stops new processes, and the
    # bridge's pids cgroup bounds threads where it has one (pids.py).
    _limit(resource.RLIMIT_NPROC, job["threads"])


def _line(exc: BaseException) -> int | None:
    """The line of the step's own code the exception came from."""
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename == restricted.FILENAME
    ]
    return lines[-1] if lines else None


def _where(exc: BaseException) -> str:
    line = _line(exc)
    return f"line {line}: " if line is not None else ""


def run_safe(code: str, out: restricted.Printed, caps: dict[str, int]) -> bool:
    """Run restricted code against the facade; True when it changed the scene."""
    try:
        compiled = restricted.compile_step(code)
    except restricted.CompileRefused as err:
        raise StepFailed(
            "compile", f"{err}; safe steps are RestrictedPython (docs/python-steps.md)"
        ) from None
    written = facade.Written()
    scope = restricted.step_globals(facade.Bpy(bpy, written, caps), out)
    try:
        exec(compiled, scope)
    except MemoryError:
        raise StepFailed("memory", "the step ran out of memory") from None
    except (restricted.Refused, facade.NotInFacade) as err:
        raise StepFailed("refused", f"{_where(err)}{err}") from None
    except facade.FacadeError as err:
        raise StepFailed("error", f"{_where(err)}{err}") from None
    except Exception as err:  # noqa: BLE001 - the step's own error, reported to its author
        raise StepFailed("error", f"{_where(err)}{type(err).__name__}: {err}") from None
    return written.wrote


def run_trusted(code: str, out: restricted.Printed, threads: int) -> bool:
    """Run plain Python with real bpy; the OS sandbox is all that confines it."""
    try:
        compiled = compile(code, restricted.FILENAME, "exec")
    except SyntaxError as err:
        raise StepFailed("compile", f"line {err.lineno}: {err.msg}") from None
    scope: dict[str, Any] = {"__name__": "__main__", "bpy": bpy}
    # The pinned seed (spec 000 §Executor Guarantees 1): the same code draws the same
    # numbers from ``random``. The clock is not pinned (docs/adr/0023).
    random.seed(code)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compiled, scope)
    except MemoryError:
        raise StepFailed("memory", "the step ran out of memory") from None
    except OSError as err:
        raise StepFailed(
            "sandbox", f"{_where(err)}the OS sandbox refused it: {type(err).__name__}: {err}"
        ) from None
    except RuntimeError as err:
        if "can't start new thread" not in str(err):
            raise StepFailed("error", f"{_where(err)}{type(err).__name__}: {err}") from None
        raise StepFailed(
            "sandbox",
            f"{_where(err)}the OS sandbox refused it: a step may hold "
            f"{threads} threads at once, Blender's own included",
        ) from None
    except BaseException as err:  # noqa: BLE001 - SystemExit too: the step ends, we answer
        raise StepFailed("error", f"{_where(err)}{type(err).__name__}: {err}") from None
    return True


def _receive(fd: int, size: int) -> None:
    """Copy the scene the bridge handed over into this sandbox's own folder."""
    out = os.open(IN_BLEND, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        handoff.copy(fd, out, size)
    except OSError as err:
        raise StepFailed("sandbox", f"could not receive the scene: {err}") from None
    finally:
        os.close(out)
        os.close(fd)


def _hand_back(fd: int) -> None:
    """Copy the saved scene into the descriptor the bridge reads once this process is gone."""
    try:
        src = os.open(OUT_BLEND, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, 0)
            handoff.copy(src, fd, os.fstat(src).st_size)
        finally:
            os.close(src)
    except OSError as err:
        raise StepFailed("sandbox", f"could not hand the saved scene back: {err}") from None


def run(job: dict[str, Any]) -> dict[str, Any]:
    """Open the scene, run the step within its time, save what changed; the answer."""
    _receive(job["in_fd"], job["in_bytes"])
    status = bpy.ops.wm.open_mainfile(filepath=IN_BLEND, load_ui=False, use_scripts=False)
    if "FINISHED" not in status:
        raise StepFailed("sandbox", f"could not open the scene: Blender returned {status}")
    out = restricted.Printed(job["output_bytes"])
    answer({"running": True})  # the bridge's clock for timeout_ms starts here
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, job["timeout_ms"] / 1000)
    wrote, failure = False, None
    try:
        if job["mode"] == "safe":
            wrote = run_safe(job["code"], out, job["caps"])
        else:
            wrote = run_trusted(job["code"], out, job["threads"])
    except StepFailed as failed:
        failure = failed
    signal.setitimer(signal.ITIMER_REAL, 0)
    answer({"ran": True})  # saving the scene has its own budget
    if out.overflowed:  # even when the step caught the refusal and went on
        failure = StepFailed("output", f"the step printed more than {out.limit} bytes")
    if failure is not None:
        return {"ok": False, "kind": failure.kind, "message": failure.message,
                "output": out.text(), "wrote": False}  # fmt: skip
    if wrote:
        try:
            saved = bpy.ops.wm.save_as_mainfile(filepath=OUT_BLEND, copy=True)
        except (RuntimeError, OSError) as err:
            raise StepFailed("sandbox", f"could not save the changed scene: {err}") from None
        if "FINISHED" not in saved:
            raise StepFailed("sandbox", f"could not save the changed scene: {saved}")
        _hand_back(job["out_fd"])
    return {"ok": True, "output": out.text(), "wrote": wrote}


def answer(reply: dict[str, Any]) -> None:
    _proto.write(json.dumps(reply) + "\n")
    _proto.flush()


def main() -> int:
    try:
        seccomp.install(seccomp.step_filter())
    except OSError as err:
        print(f"blendmesh sandbox: {err}", file=sys.stderr, flush=True)
        return 1
    answer({"ready": True})
    line = sys.stdin.buffer.readline(MAX_JOB_BYTES)
    if not line.endswith(b"\n"):
        answer({"ok": False, "kind": "sandbox", "message": "no complete job arrived"})
        return 1
    job = json.loads(line)
    try:
        set_limits(job)
        reply = run(job)
    except StepFailed as failed:
        reply = {"ok": False, "kind": failed.kind, "message": failed.message, "wrote": False}
    except MemoryError:
        reply = {"ok": False, "kind": "memory", "message": "out of memory", "wrote": False}
    answer(reply)
    return 0


if __name__ == "__main__":
    # os._exit: no interpreter teardown that a step could have hooked (atexit, __del__).
    code = main()
    sys.stdout.flush()
    os._exit(code)
