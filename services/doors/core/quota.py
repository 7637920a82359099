"""How many runs one user may have at once: under way, and waiting for a person.

1,100 runs waiting for approval were accepted from one user in 8.6 s: another user's
one-cube run then took 14.4 s, and the policy's expiry consumer, which holds every
waiting approval until it expires, filled its 1,000 slots, after which nobody's approvals
expired on time. A door asks ``RunQuota.problem`` of the user's active runs (the audit's
view, caught up with the log when it answers) before it puts a request in the log, and
refuses one over either limit, naming it and its setting. Both bounds are per user, so a
user can hold at most ``waiting`` of the expiry consumer's slots.

The limits are read once from the environment (``RunQuota.from_env``). Pure but for
``check``, which asks the audit through the client it is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from nats.aio.client import Client

from contracts.errors import BlendmeshError
from contracts.queries import RunRow
from services.audit import client as audit
from services.doors.core.fairness import whole_numbers

SETTINGS = {
    "runs": "BLENDMESH_USER_RUNS_AT_ONCE",
    "waiting": "BLENDMESH_USER_APPROVALS_WAITING",
}
WAITING = "awaiting_confirmation"


class QuotaExceeded(BlendmeshError):
    """The user has as many runs as they may; the message names the limit and its setting."""


@dataclass(frozen=True)
class RunQuota:
    runs: int = 20
    waiting: int = 10

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RunQuota:
        return cls(**whole_numbers(env, {f.name: SETTINGS[f.name] for f in fields(cls)}))

    def problem(self, active: Sequence[RunRow]) -> str | None:
        """Why one more run would be one too many, given the user's ``active`` ones."""
        waiting = sum(1 for run in active if run.state == WAITING)
        if waiting >= self.waiting:
            return (
                f"you have {waiting} runs waiting for approval, the most one user may have "
                f"({SETTINGS['waiting']}); approve or reject them (`blendmesh approvals`) "
                "before you ask for more"
            )
        if len(active) >= self.runs:
            return (
                f"you have {len(active)} runs under way, the most one user may have at once "
                f"({SETTINGS['runs']}); wait for one to finish"
            )
        return None

    async def check(self, nc: Client, prefix: str, user: str) -> None:
        """Raise QuotaExceeded when ``user`` may not start another run now."""
        active = await audit.query_runs(nc, prefix, self.runs + 1, user=user, active=True)
        problem = self.problem(active)
        if problem is not None:
            raise QuotaExceeded(problem)
