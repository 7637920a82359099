"""Whether a run's user may change a scene, by its role in the scene's project and the
scene's lock (contracts/project_book.py): the executor's own check, behind policy's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from contracts.project_book import ProjectBook, may_run

Books = Callable[[], Awaitable[ProjectBook]]


def refusal_of(book: ProjectBook, scene_id: str, owner: str, user: str, now: float) -> str | None:
    """Why ``user`` may not change scene ``scene_id`` of ``owner`` at ``now``; None: it may."""
    role = book.scene_role(scene_id, owner, user)
    if role is None:
        return f"scene {scene_id} belongs to another user; use a scene id of your own"
    if not may_run(role):
        return f"you are a {role} of scene {scene_id}'s project and may only read it"
    held = book.lock(scene_id, now)
    if held is not None and held.holder != user:
        return f"scene {scene_id} is locked by {held.holder}; ask a lead to break the lock"
    return None


def refusals(
    books: Books, clock: Callable[[], float]
) -> Callable[[str, str, str], Awaitable[str | None]]:
    """``refusal_of`` over the book as the log holds it now."""

    async def refusal(scene_id: str, owner: str, user: str) -> str | None:
        return refusal_of(await books(), scene_id, owner, user, clock())

    return refusal
