"""The projects and locks the log holds, folded into one book, and the rules read from it.

Every door and the policy service fold the same events with this one function, as they
fold runs with ``contracts/fold.py``. The fold re-checks each event's authority as of
its place in the log (a member added by someone who was no lead of the project then
changes nothing), so the book is what the rules allow even if a door had a bug.

What each role may do (docs/adr/0058):

    viewer       reads the project's scenes, runs and audit; starts nothing, locks nothing
    artist       runs; a destructive operation waits for a lead (not for the artist)
    lead         runs and approves its own and its artists' operations, manages members,
                 breaks locks
    supervisor   what a lead may, and approves reviews of revisions
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.projects import (
    MAX_MEMBERS,
    MAX_PROJECTS,
    MAX_SCENES,
    LockBroken,
    LockExpired,
    LockReleased,
    LockTaken,
    MemberAdded,
    MemberRemoved,
    ProjectCreated,
    Role,
    SceneFiled,
    StudioEvent,
    personal_owner,
    personal_project,
)

RANK: dict[Role, int] = {"viewer": 0, "artist": 1, "lead": 2, "supervisor": 3}


def may_run(role: Role | None) -> bool:
    return role is not None and RANK[role] >= RANK["artist"]


def may_manage(role: Role | None) -> bool:
    """Add and remove members, break locks, approve what waits for a lead."""
    return role is not None and RANK[role] >= RANK["lead"]


def may_review(role: Role | None) -> bool:
    """Record a review of a revision (approve it, or ask for changes)."""
    return may_manage(role)


def approves_own(role: Role | None) -> bool:
    """Whether a run's own user may approve its destructive operations: an artist's
    wait for a lead, as a studio's pipeline has them."""
    return may_manage(role)


@dataclass
class Project:
    project_id: str
    created_by: str
    members: dict[str, Role] = field(default_factory=dict)
    scenes: set[str] = field(default_factory=set)

    def leads(self) -> list[str]:
        return sorted(m for m, r in self.members.items() if may_manage(r))


@dataclass(frozen=True)
class Lock:
    lock_id: str
    scene_id: str
    holder: str
    held_by: str
    expires_at: float
    note: str


@dataclass
class ProjectBook:
    """The projects, their members and scenes, and the scenes' locks (no I/O)."""

    projects: dict[str, Project] = field(default_factory=dict)
    filed: dict[str, str] = field(default_factory=dict)  # scene -> project
    locks: dict[str, Lock] = field(default_factory=dict)  # scene -> its newest lock
    ended: set[str] = field(default_factory=set)  # lock ids released, broken or expired

    def apply(self, event: StudioEvent) -> None:
        project: Project | None
        match event:
            case ProjectCreated():
                if event.project_id not in self.projects and len(self.projects) < MAX_PROJECTS:
                    self.projects[event.project_id] = Project(
                        event.project_id, event.by, {event.by: "lead"}
                    )
            case MemberAdded():
                project = self.projects.get(event.project_id)
                if project is None or not may_manage(project.members.get(event.by)):
                    return
                if event.member not in project.members and len(project.members) >= MAX_MEMBERS:
                    return
                if not may_manage(event.role) and project.leads() == [event.member]:
                    return  # a project always keeps a lead
                project.members[event.member] = event.role
            case MemberRemoved():
                project = self.projects.get(event.project_id)
                if project is None or event.member not in project.members:
                    return
                if event.by != event.member and not may_manage(project.members.get(event.by)):
                    return
                if project.leads() == [event.member]:
                    return
                del project.members[event.member]
            case SceneFiled():
                project = self.projects.get(event.project_id)
                if project is None or event.scene_id in self.filed:
                    return  # the first filing stands: a scene never moves by a later word
                if not may_run(project.members.get(event.by)) or len(project.scenes) >= MAX_SCENES:
                    return
                project.scenes.add(event.scene_id)
                self.filed[event.scene_id] = event.project_id
            case LockTaken():
                held = self.lock(event.scene_id, event.at)
                if held is None:
                    self.locks[event.scene_id] = Lock(
                        event.lock_id, event.scene_id, event.holder, event.held_by,
                        event.expires_at, event.note,
                    )  # fmt: skip
            case LockReleased() | LockBroken() | LockExpired():
                held = self.locks.get(event.scene_id)
                if held is not None and held.lock_id == event.lock_id:
                    self.ended.add(event.lock_id)

    def project_of(self, scene_id: str, owner: str) -> str:
        """The project ``scene_id`` belongs to: the one it was filed in, else its owner's
        personal project (``user:<owner>``)."""
        return self.filed.get(scene_id) or personal_project(owner)

    def role(self, project_id: str, user: str) -> Role | None:
        """``user``'s role in the project; a personal project's owner is its lead."""
        if personal_owner(project_id) is not None:
            return "lead" if personal_owner(project_id) == user else None
        project = self.projects.get(project_id)
        return None if project is None else project.members.get(user)

    def scene_role(self, scene_id: str, owner: str | None, user: str) -> Role | None:
        """``user``'s role on the scene: by the project it is filed in, else the owner's
        (``None``: not the user's to reach at all, exactly like an unknown scene)."""
        if scene_id in self.filed:
            return self.role(self.filed[scene_id], user)
        return "lead" if owner and owner == user else None

    def leads_of(self, scene_id: str) -> list[str]:
        """Who besides a run's user may approve on the scene: its project's leads."""
        project = self.projects.get(self.filed.get(scene_id, ""))
        return project.leads() if project is not None else []

    def lock(self, scene_id: str, now: float) -> Lock | None:
        """The lock held on the scene at ``now``; an ended or expired one holds nothing."""
        held = self.locks.get(scene_id)
        if held is None or held.lock_id in self.ended or now >= held.expires_at:
            return None
        return held

    def lapsed(self, scene_id: str, now: float) -> Lock | None:
        """A lock whose time ran out and that no event has ended yet: due a LockExpired."""
        held = self.locks.get(scene_id)
        if held is None or held.lock_id in self.ended or now < held.expires_at:
            return None
        return held

    def visible(self, user: str) -> list[Project]:
        """The shared projects ``user`` is a member of."""
        return [p for _, p in sorted(self.projects.items()) if user in p.members]
