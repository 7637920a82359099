"""Network work off Blender's thread.

Jobs run one at a time on a daemon thread; what they return (or the ``GatewayError``
they raise) and their progress lines queue up for Blender's thread, where ``drain``
hands them to the callback the job was submitted with. ``drain`` is what the add-on's
``bpy.app.timers`` function calls; it never blocks.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from .gateway import GatewayError

Done = Callable[[Any], None]
Failed = Callable[[str], None]
Progress = Callable[[str], None]
MAX_QUEUED = 16  # jobs waiting; the panel offers nothing more while one runs


class Worker:
    def __init__(self, broken: Failed | None = None) -> None:
        # Told what a callback raised on Blender's thread: raised out of a timer, it
        # would stop the timer and with it the whole add-on.
        self._broken = broken
        self._jobs: queue.Queue[tuple[Callable[[Progress], Any], Done, Failed, Progress]] = (
            queue.Queue(MAX_QUEUED)
        )
        self._results: queue.Queue[tuple[Callable[..., None], Any]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._running = 0
        self._lock = threading.Lock()

    @property
    def idle(self) -> bool:
        with self._lock:
            return self._running == 0 and self._results.empty()

    def submit(
        self, job: Callable[[Progress], Any], done: Done, failed: Failed, progress: Progress
    ) -> None:
        with self._lock:
            self._running += 1
        try:
            self._jobs.put_nowait((job, done, failed, progress))
        except queue.Full:
            with self._lock:
                self._running -= 1
            failed("too many requests are waiting; wait for the one running to end")
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="blendmesh", daemon=True)
            self._thread.start()

    def drain(self, limit: int = 100) -> int:
        """Hand queued results to their callbacks, on the calling (Blender's) thread."""
        handled = 0
        while handled < limit:
            try:
                callback, value = self._results.get_nowait()
            except queue.Empty:
                break
            try:
                callback(value)
            except Exception as exc:  # shown in the panel; the timer goes on
                if self._broken is None:
                    raise
                self._broken(f"{type(exc).__name__}: {exc}")
            handled += 1
        return handled

    def _serve(self) -> None:
        while True:
            job, done, failed, progress = self._jobs.get()

            def report(line: str, progress: Progress = progress) -> None:
                self._results.put((progress, line))

            try:
                self._results.put((done, job(report)))
            except GatewayError as exc:
                self._results.put((failed, str(exc)))
            except Exception as exc:  # noqa: BLE001 - shown in the panel, not as a traceback
                self._results.put((failed, f"{type(exc).__name__}: {exc}"))
            finally:
                with self._lock:
                    self._running -= 1
