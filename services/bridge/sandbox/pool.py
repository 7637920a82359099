"""Warm, one-shot sandboxed Blenders for PYTHON steps, as the bridge sees them.

Starting Blender in the sandbox takes about half a second, far above a step's budget, so
one sandboxed process (warm.py) is started ahead of need: it imports bpy and waits. A
step takes it (``Pool.slot``), uses it once, and it is killed and its folder removed
whatever happened; the next one is started right away. No state of one step can reach
another.

The first use checks that the sandbox can be set up at all (bubblewrap present, the
blendmesh home out of its sight, a trial run); when it cannot, every step is refused
with ``SandboxUnavailable`` and nothing runs unconfined.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from . import box, pids, seccomp
from .warm import Warm

PACKAGE = str(Path(__file__).resolve().parent)


class Pool:
    """At most one warm sandboxed Blender, started on first use and after every step."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self._layout: box.Layout | None = None
        self._root: Path | None = None
        self._warm: Warm | None = None
        self._retired: list[Warm] = []
        self._count = 0
        self._budget_parent = pids.parent_folder()
        pids.sweep(self._budget_parent)

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
        folder.mkdir(mode=0o700)
        return folder

    def _ensure_layout(self) -> box.Layout:
        if self._layout is not None:
            return self._layout
        layout = box.Layout(
            bwrap=box.find_bwrap(self.env),
            python=sys.executable,
            runtimes=tuple(dict.fromkeys((sys.base_prefix, sys.prefix))),
            package=PACKAGE,
            root_links=box.root_links(),
        )
        box.check_secrets(layout, self.secrets())
        box.probe(layout, seccomp.sandbox_filter())
        self._layout = layout
        return layout

    def _spawn(self) -> Warm:
        layout = self._ensure_layout()
        folder = self._folder()
        try:
            return Warm(layout, folder, self._budget_parent)
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
