"""Standing approvals (``approve_and_always_allow``) and the request/reply messages about them.

An entry lets one user run one tool on one scene without being asked again. The policy
service owns the entries (a KV bucket); clients list and revoke them on
``subjects.query(prefix, "allowlist.list")`` and ``"allowlist.revoke"``.
"""

from __future__ import annotations

import hashlib

import msgspec

LIST = "allowlist.list"
REVOKE = "allowlist.revoke"


def entry_id(user: str, tool: str, scene_id: str) -> str:
    """The stable id of the entry for (user, tool, scene): approving twice makes one entry.
    ``tool`` is ``contracts.python_approvals.standing_key``: trusted Python by its code."""
    return hashlib.sha256(f"{user}\x00{tool}\x00{scene_id}".encode()).hexdigest()[:16]


class AllowlistEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A standing approval: this user may run this tool on this scene without being asked."""

    entry_id: str
    user: str
    tool: str
    scene_id: str
    created_at: float  # seconds since the epoch
    created_by: str  # who chose approve_and_always_allow
    run_id: str  # the run whose approval created it
    # For python.trusted: the one code text it covers (the entry id is keyed by it too).
    code_sha256: str | None = None


class AllowlistListQuery(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Entries of one user, or of every user when ``user`` is None."""

    user: str | None = None


class AllowlistRevoke(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Remove one standing approval, so its user is asked again next time."""

    entry_id: str
    user: str | None = None  # when set, only this user's entry may be revoked
    revoked_by: str = ""  # who asked, as the door authenticated them; recorded in the log


class AllowlistReply(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``ok`` false carries an ``error`` saying what to do."""

    ok: bool
    error: str | None = None
    entries: list[AllowlistEntry] = []
