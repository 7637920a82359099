"""The bubblewrap command line a PYTHON step's Blender runs under, and whether it can.

Everything here but ``probe`` is pure: paths in, argv out, so the confinement can be read
(and unit tested) in one place. The sandbox sees, read-only, the system's ``/usr``, the
Python installation and virtual environment bpy lives in, and this package at
``/blendmesh/sandbox``; writable, only the step's own working folder at ``/sandbox``.
It has no network, no other processes, a clean environment and a private ``/tmp``. The
blendmesh home (NATS credentials, scenes, the audit database) must not lie under, or
contain, anything bound: ``check_secrets`` refuses to start otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

INSIDE_PACKAGE = "/blendmesh/sandbox"
INSIDE_WORKDIR = "/sandbox"
TMP_BYTES = 64 * 1024 * 1024  # the private /tmp is memory; bound it
ROOT_ENTRIES = ("bin", "lib", "lib64", "sbin")  # often symlinks into /usr (merged /usr)
PROBE_SECONDS = 10.0
REFUSAL = (
    "Python steps need the bubblewrap OS sandbox, and blendmesh never runs them "
    "unconfined; install bubblewrap (Debian/Ubuntu package 'bubblewrap') or set "
    "BLENDMESH_BWRAP to its path"
)


class SandboxUnavailable(RuntimeError):
    """The OS sandbox cannot be set up here; the message says why and what to do."""


@dataclass(frozen=True)
class Layout:
    """What the sandbox is made of, all absolute host paths."""

    bwrap: str
    python: str  # the interpreter that has bpy (the bridge's own)
    runtimes: tuple[str, ...]  # bound read-only where they are: Python and the venv
    package: str  # this directory, bound read-only at INSIDE_PACKAGE
    workdir: str  # bound read-write at INSIDE_WORKDIR
    root_links: Mapping[str, str | None]  # /bin etc.: symlink target, or None for a dir


def root_links(root: str = "/") -> dict[str, str | None]:
    """How ``/bin``, ``/lib``, ``/lib64`` and ``/sbin`` look on this host: the target of
    each that is a symlink, None for each that is a real directory; absent ones left out."""
    found: dict[str, str | None] = {}
    for name in ROOT_ENTRIES:
        path = os.path.join(root, name)
        if os.path.islink(path):
            found[name] = os.readlink(path)
        elif os.path.isdir(path):
            found[name] = None
    return found


def argv(layout: Layout, seccomp_fd: int, module_args: Sequence[str]) -> list[str]:
    """The full command: bwrap, its options, then the sandboxed Python running
    ``-m sandbox.<module_args...>`` from the read-only package mount."""
    cmd = [
        layout.bwrap,
        "--unshare-all",  # no network, own pid/ipc/uts/cgroup namespaces
        "--unshare-user",  # even for root: capabilities then mean nothing outside
        "--disable-userns",  # and no namespace of its own nested inside
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--new-session",  # no terminal to push keystrokes into
        "--clearenv",
        "--setenv", "PATH", "/usr/bin",
        "--setenv", "HOME", "/tmp",
        "--setenv", "TMPDIR", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONPATH", os.path.dirname(INSIDE_PACKAGE),
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        # Pinned environment (spec 000 §Executor Guarantees 1): the same set iteration
        # order and the same local time zone on every run of a step.
        "--setenv", "PYTHONHASHSEED", "0",
        "--setenv", "TZ", "UTC",
        "--ro-bind", "/usr", "/usr",
        # Before the binds: a venv or checkout under the host's /tmp is bound into it.
        "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
    ]  # fmt: skip
    for name, target in sorted(layout.root_links.items()):
        if target is None:
            cmd += ["--ro-bind", f"/{name}", f"/{name}"]
        else:
            cmd += ["--symlink", target, f"/{name}"]
    for runtime in layout.runtimes:
        cmd += ["--ro-bind", runtime, runtime]
    cmd += [
        "--ro-bind", layout.package, INSIDE_PACKAGE,
        "--bind", layout.workdir, INSIDE_WORKDIR,
        "--proc", "/proc",
        "--dev", "/dev",
        "--remount-ro", "/",  # the root bwrap builds is writable memory otherwise
        "--chdir", INSIDE_WORKDIR,
        "--seccomp", str(seccomp_fd),
        layout.python, "-s", "-B", "-m", *module_args,
    ]  # fmt: skip
    return cmd


def bound(layout: Layout) -> list[str]:
    """Every host path the sandbox can see."""
    return ["/usr", *layout.runtimes, layout.package, layout.workdir]


def _overlaps(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def check_secrets(layout: Layout, secrets: Iterable[Path]) -> None:
    """Refuse a layout that would show a secret (the blendmesh home, the NATS credentials)
    to the sandbox: neither may lie under a bound path nor contain one."""
    for secret in secrets:
        real = Path(os.path.realpath(secret))
        for path in bound(layout):
            if _overlaps(real, Path(os.path.realpath(path))):
                raise SandboxUnavailable(
                    f"the sandbox would see {secret} through {path}; move the blendmesh home "
                    "(BLENDMESH_HOME) or the NATS credentials out of the Python installation "
                    "and the bridge's code; Python steps do not run until then"
                )


def find_bwrap(env: Mapping[str, str]) -> str:
    """The bubblewrap executable: BLENDMESH_BWRAP, else ``bwrap`` on PATH."""
    wanted = env.get("BLENDMESH_BWRAP") or "bwrap"
    found = shutil.which(wanted, path=env.get("PATH"))
    if found is None:
        raise SandboxUnavailable(f"{REFUSAL} ({wanted!r} was not found)")
    return found


def probe(layout: Layout, seccomp: bytes) -> None:
    """A trial run of the real sandbox with a do-nothing Python; raises SandboxUnavailable
    with bubblewrap's own words when it cannot start (no user namespaces, no seccomp)."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, seccomp)
        os.close(write_fd)
        write_fd = -1
        done = subprocess.run(
            argv(layout, read_fd, ["sandbox.probe"]),
            pass_fds=(read_fd,),
            capture_output=True,
            timeout=PROBE_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"{REFUSAL} (the trial run failed: {exc})") from None
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)
    if done.returncode != 0 or done.stdout.strip() != b"confined":
        said = done.stderr.decode(errors="replace").strip()[-300:]
        raise SandboxUnavailable(
            f"{REFUSAL} (the trial run exited with {done.returncode}: {said or 'no message'})"
        )
