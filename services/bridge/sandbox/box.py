"""The bubblewrap command line a PYTHON step's Blender runs under, and whether it can.

Everything here but ``probe`` is pure: paths in, argv out, so the confinement can be read
(and unit tested) in one place. The sandbox sees, read-only, the system's ``/usr``, the
Python installation and virtual environment bpy lives in, and this package at
``/blendmesh/sandbox``; writable, only two size-capped memory file systems of its own,
``/sandbox`` and ``/tmp``, which vanish with the sandbox's last process whatever killed
the bridge. No host folder is writable inside: the scene goes in and out through file
descriptors the bridge opened (pool.py). It runs as an unprivileged uid, has no network,
no other processes, no ``/proc`` (whose mount table would name host paths), a read-only
``/dev`` and a clean environment. The blendmesh home (NATS credentials, scenes, the audit
database) must not lie under, or contain, anything bound: ``check_secrets`` refuses to
start otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contracts.python_steps import TMP_MIB, WORK_MIB

INSIDE_PACKAGE = "/blendmesh/sandbox"
INSIDE_WORKDIR = "/sandbox"
MIB = 1024 * 1024
# The uid and gid a step runs as inside its user namespace: not root there, so nothing it
# makes is root's, and the folders below are its own (mode 0700).
STEP_UID = 65534
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


@dataclass(frozen=True)
class Fds:
    """The descriptors bubblewrap reads its instructions from: the seccomp program; where
    to write the sandbox's first process id (``info``); what to wait on before it starts
    the Python (``block``: the bridge puts that process in a pids budget first)."""

    seccomp: int
    info: int | None = None
    block: int | None = None


def argv(layout: Layout, fds: Fds, module_args: Sequence[str]) -> list[str]:
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
        "--uid", str(STEP_UID), "--gid", str(STEP_UID),
        "--ro-bind", "/usr", "/usr",
        # Before the binds: a venv or checkout under the host's /tmp is bound into it.
        "--perms", "0700", "--size", str(TMP_MIB * MIB), "--tmpfs", "/tmp",
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
        "--perms", "0700", "--size", str(WORK_MIB * MIB), "--tmpfs", INSIDE_WORKDIR,
        "--dev", "/dev",
        "--remount-ro", "/dev",  # its /dev/shm would be memory without a bound
        "--remount-ro", "/",  # the root bwrap builds is writable memory otherwise
        "--chdir", INSIDE_WORKDIR,
        "--seccomp", str(fds.seccomp),
    ]  # fmt: skip
    if fds.info is not None:
        cmd += ["--info-fd", str(fds.info)]
    if fds.block is not None:
        cmd += ["--block-fd", str(fds.block)]
    return [*cmd, layout.python, "-s", "-B", "-m", *module_args]


def bound(layout: Layout) -> list[str]:
    """Every host path the sandbox can see."""
    return ["/usr", *layout.runtimes, layout.package]


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
            argv(layout, Fds(seccomp=read_fd), ["sandbox.probe"]),
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
