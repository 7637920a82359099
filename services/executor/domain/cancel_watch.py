"""Whether a running run was cancelled: looked up in the log alongside each operation.

Each look is one direct get of the run's ``cancel_requested`` subject, started when an
operation starts and read when it ends: a run waits for a look only when its operation
is quicker than one direct get. A cancel stops the run before its next operation; the
runner then rolls the whole run back, so the scene stays at the revision the run started
from (``runner.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from contracts.cancels import cancelled
from contracts.events import AnyEvent, CancelRequested
from contracts.operations import Operation
from services.executor.domain.operation import OperationRunner, Step

log = logging.getLogger("blendmesh.executor")

Look = Callable[[str], Awaitable[AnyEvent | None]]  # the run's cancel, or None


class CancelWatch:
    def __init__(self, look: Look | None, run_id: str) -> None:
        self._look = look
        self._run_id = run_id
        self._task: asyncio.Future[AnyEvent | None] | None = None
        self.cancel: CancelRequested | None = None
        self.again()

    def again(self) -> None:
        """Start the next look; it runs while the next operation does."""
        if self._look is not None and self.cancel is None and self._task is None:
            self._task = asyncio.ensure_future(self._look(self._run_id))

    async def asked(self) -> CancelRequested | None:
        """The cancel, if the last look found one (or an earlier look did)."""
        task, self._task = self._task, None
        if self.cancel is not None or task is None:
            return self.cancel
        try:
            found = await task
        except Exception as exc:  # noqa: BLE001 - a look that fails never stops a run
            log.warning("could not look for a cancel of run %s: %s", self._run_id, exc)
            return None
        if isinstance(found, CancelRequested):
            self.cancel = found
        return self.cancel

    def reason(self, failed: Step) -> str:
        """Why an operation after ``failed`` was not run."""
        if self.cancel is not None:
            return f"not run: {self.cancel.cancelled_by} cancelled the run"
        return f"not run: {failed.op_id} failed"

    def stopped(self, steps: OperationRunner, op: Operation, index: int, scene_hash: str) -> Step:
        """The step the cancel stops the run at: ``op``, not run. A cancel heard after the
        last operation stops the run at that one: its receipt stays as it ran."""
        assert self.cancel is not None
        contract, text = cancelled(self.cancel)
        receipt = steps.skipped(op, f"not run: {text}")
        return Step(op.operation_id, receipt, scene_hash, contract, message=text, index=index)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
