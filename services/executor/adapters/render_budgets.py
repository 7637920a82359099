"""What each user's render jobs under way cost, in the KV bucket ``<prefix>_render_budgets``:
one key per user, the unfinished jobs and their costs, changed by compare-and-set.

An executor claims a job's cost before queuing its frames and releases it when it logs
the job's end. A claim first drops the jobs the log says have stopped, so an executor
killed between the end and the release leaves nothing behind for long. Doors read the key
to refuse a job over the budget before it enters the log (docs/renders.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError

from contracts.renders import DEFAULT_COST_AT_ONCE
from contracts.subjects import subject_token
from services.runtime.nats.streams import ensure_kv

SETTING = "BLENDMESH_USER_RENDER_COST_AT_ONCE"
MAX_JOBS = 64  # jobs of one user under way at once, whatever they cost
TRIES = 20  # compare-and-set attempts against other executors' claims and releases

Jobs = dict[str, int]  # job id -> cost


def at_once(env: Mapping[str, str]) -> int:
    """The budget from ``SETTING`` in ``env``, refused naming it when not a whole number."""
    raw = (env.get(SETTING) or "").strip()
    if not raw:
        return DEFAULT_COST_AT_ONCE
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{SETTING}={raw[:32]!r} must be a whole number of at least 1")
    return int(raw)


async def under_way(
    js: JetStreamContext, prefix: str, user: str, stopped: Callable[[str], Awaitable[bool]]
) -> int:
    """What ``user``'s jobs under way cost, leaving out those the log says have stopped."""
    jobs, _ = await _read(js, prefix, user)
    total = 0
    for job, cost in jobs.items():
        if not await stopped(job):
            total += cost
    return total


async def _read(js: JetStreamContext, prefix: str, user: str) -> tuple[Jobs, int]:
    kv = await ensure_kv(js, prefix, "render_budgets")
    try:
        entry = await kv.get(subject_token(user))
    except (KeyNotFoundError, KeyDeletedError):
        return {}, 0
    return msgspec.json.decode(entry.value or b"{}", type=Jobs), entry.revision or 0


class KvRenderBudgets:
    def __init__(
        self,
        js: JetStreamContext,
        prefix: str,
        stopped: Callable[[str], Awaitable[bool]],
        limit: int,
    ) -> None:
        self._js = js
        self._prefix = prefix
        self._stopped = stopped
        self.limit = limit

    async def claim(self, user: str, job_id: str, cost: int) -> str | None:
        """Count ``job_id`` against ``user``'s budget; why not, when it would go over."""
        for _ in range(TRIES):
            jobs, revision = await _read(self._js, self._prefix, user)
            if job_id in jobs:  # claimed already: this request is handled again
                return None
            live = {j: c for j, c in jobs.items() if not await self._stopped(j)}
            under_way = sum(live.values())
            if under_way + cost > self.limit:
                return (
                    f"your render jobs under way cost {under_way:,}; with this one ({cost:,}) "
                    f"they would pass the {self.limit:,} one user may have at once ({SETTING})"
                    ": wait for them to finish, or cancel one (`blendmesh render cancel JOB`)"
                )
            if len(live) >= MAX_JOBS:
                return f"you have {len(live)} render jobs under way, the most one user may have"
            if await self._put(user, {**live, job_id: cost}, revision):
                return None
        raise RuntimeError(f"the render budget of {user!r} changed {TRIES} times under a claim")

    async def release(self, user: str, job_id: str) -> None:
        for _ in range(TRIES):
            jobs, revision = await _read(self._js, self._prefix, user)
            if job_id not in jobs:
                return
            if await self._put(user, {j: c for j, c in jobs.items() if j != job_id}, revision):
                return

    async def _put(self, user: str, jobs: Jobs, revision: int) -> bool:
        kv = await ensure_kv(self._js, self._prefix, "render_budgets")
        value = msgspec.json.encode(jobs)
        try:
            if revision:
                await kv.update(subject_token(user), value, last=revision)
            else:
                await kv.create(subject_token(user), value)
        except KeyWrongLastSequenceError:
            return False
        return True
