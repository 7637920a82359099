"""What the door reads and writes, as small Protocols: the log, the audit views, scenes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from contracts.changes import ChangeList
from contracts.errors import BlendmeshError
from contracts.events import AnyEvent, ApprovalResolved, CancelRequested, RunRequested
from contracts.reviews import RevisionReviewed


class DoorUnavailable(BlendmeshError):
    """A service the answer needs did not answer; the message says which."""


class NotTheirs(BlendmeshError):
    """No such scene or revision, or not one the asker may see: the two look the same."""


class SceneReviews(Protocol):
    """Change lists and reviews of scenes (the doors' core ``reviews.Revisions``); both
    raise ``NotTheirs`` for a scene or revision the user may not see, and ``review``
    ``contracts.reviews.ReviewRefused`` for a review it cannot record."""

    async def changes(
        self, scene_id: str, user: str, base: int | None, revision: int | None
    ) -> ChangeList: ...

    async def review(
        self, scene_id: str, user: str, revision: int, verdict: str, note: str
    ) -> RevisionReviewed: ...


class MeshReads(Protocol):
    async def requested(self, run_id: str) -> RunRequested | None:
        """A run's request as the log holds it; None when there is no such run."""
        ...

    async def events(self, run_id: str) -> Sequence[AnyEvent]: ...

    async def thread_owner(self, thread_id: str) -> str | None:
        """The user whose run first used the thread; None for a new thread."""
        ...

    async def scene_owner(self, scene_id: str) -> str | None:
        """The owner of a scene's head; None for a scene that does not exist yet."""
        ...

    async def scene_head(self, scene_id: str) -> int | None:
        """The revision a scene's head is at; None for a scene with none."""
        ...

    async def scene_history(self, scene_id: str) -> list[tuple[int, str]]:
        """Every stored revision of a scene and its hash prefix, oldest first."""
        ...

    async def audit_records(self, run_id: str) -> list[dict[str, Any]]: ...

    async def runs_of(self, user: str, limit: int) -> list[dict[str, Any]]: ...

    async def scenes_of(self, user: str, limit: int) -> list[dict[str, Any]]: ...


class RunWriter(Protocol):
    async def publish(self, event: RunRequested | ApprovalResolved | CancelRequested) -> int: ...


class Files(Protocol):
    """The files staged per user (ObjectStoreUploads): assets going in, views coming out."""

    async def stage(self, user: str, data: bytes) -> str: ...

    async def get(self, user: str, blob: str) -> bytes | None:
        """``user``'s staged file ``blob``; None when there is none (never staged, expired,
        or another user's)."""
        ...
