"""Policy decisions, behind a port so the rules can change without touching handlers.

The rules themselves are Cedar policies (``services/policy/cedar.py``); the defaults follow
By design: read_only and safe_write are allowed, destructive waits for a human, and a tool
the registry does not know is denied. The effective level is the stricter of the plan's
declaration and the tool's own.
"""

from __future__ import annotations

from typing import Protocol

from contracts.events import OperationDecision
from contracts.operations import Operation
from contracts.tools import ToolSpec


class PolicyEngine(Protocol):
    """Port: decide one operation for one user on one scene."""

    policy_set: str  # names the rules, e.g. "blendmesh.v1"
    policy_set_hash: str  # "sha256:<hex>" of the exact rules

    def decide(
        self,
        user: str,
        op: Operation,
        tool: ToolSpec | None,
        scene_id: str = "default",
        role: str = "lead",
    ) -> OperationDecision:
        """``role`` is the user's role in the scene's project (contracts/project_book.py);
        a scene's owner is the lead of its personal project."""
        ...
