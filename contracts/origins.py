"""Where a run came from when it is not a fresh request (issue 42, ADR 0063): a re-run of
an earlier run from one of its operations, a fork of it, or one run of a bulk replay.

It rides on the new run's ``run.requested`` so the log itself links the two runs: a
reader of either finds the other without any index, and ``audit rebuild`` keeps the link.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

# "rerun": the original's request id, so its committed operations are idempotent no-ops;
# "fork": a request id of its own, on the revision the original started from;
# "replay": a re-run from the first operation, chosen by a bulk replay's filter.
OriginKind = Literal["rerun", "fork", "replay"]
# A run id as every door mints and checks it: one subject token, so it names one run.
RUN_ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
MAX_OPERATION_INDEX = 10_000  # above any plan's operation limit: an index past it is a typo


class RunOrigin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The run a new run re-runs or forks, and from which operation (1-based, in the
    original's schedule); ``base_revision`` is the revision a fork starts from."""

    run: Annotated[str, msgspec.Meta(pattern=RUN_ID_PATTERN)]
    kind: OriginKind
    from_op: Annotated[int, msgspec.Meta(ge=1, le=MAX_OPERATION_INDEX)] = 1
    base_revision: Annotated[int, msgspec.Meta(ge=1)] | None = None
