"""Who may do what on a run's scene, by roles in its project (contracts/project_book.py).

Pure: the handlers read the book and the scene's owner, and ask these.
"""

from __future__ import annotations

from contracts.project_book import ProjectBook, approves_own, may_manage
from contracts.projects import Role
from services.runtime.server.identity import may_resolve


def run_role(book: ProjectBook, scene_id: str, owner: str | None, user: str) -> Role | None:
    """The run's user's role on its scene; a scene with no head yet is the user's own."""
    return book.scene_role(scene_id, owner or user, user)


def may_answer(
    book: ProjectBook,
    scene_id: str,
    owner: str | None,
    run_user: str,
    resolver: str,
    approvers: frozenset[str],
) -> bool:
    """Whether ``resolver`` may answer an approval of ``run_user``'s run on the scene: the
    run's own user unless an artist (whose run waits for a lead), a lead (or supervisor)
    of the scene's project, or one the registry marks approver."""
    if resolver == run_user and not approves_own(run_role(book, scene_id, owner, run_user)):
        return resolver in approvers
    if resolver != run_user and may_manage(run_role(book, scene_id, owner or run_user, resolver)):
        return True
    return may_resolve(resolver, run_user, approvers)
