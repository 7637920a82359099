"""Policy decisions, behind a port so the rules can change without touching handlers.

The default rules follow DESIGN §3: read_only and safe_write are allowed, destructive
waits for a human, and a tool the registry does not know is denied. The effective level
is the stricter of the plan's declaration and the tool's own.
"""

from __future__ import annotations

from typing import Protocol

from contracts.events import OperationDecision
from contracts.operations import SAFETY_ORDER, Operation
from contracts.tools import ToolSpec


class PolicyEngine(Protocol):
    """Port: decide one operation for one user."""

    policy_set: str

    def decide(self, user: str, op: Operation, tool: ToolSpec | None) -> OperationDecision: ...


class SafetyLevelPolicy:
    """The built-in rules, keyed on the safety level alone."""

    policy_set = "blendmesh.safety-levels.v1"

    def decide(self, user: str, op: Operation, tool: ToolSpec | None) -> OperationDecision:
        if tool is None:
            return self._decision(
                op, "deny", f"{op.tool_name} is not a registered tool", "deny-unknown-tool"
            )
        level = max(op.safety_level, tool.safety_level, key=SAFETY_ORDER.__getitem__)
        if level == "destructive":
            return self._decision(
                op,
                "require_approval",
                f"{op.tool_name} is destructive; a person must approve it",
                "approve-destructive",
                level,
            )
        return self._decision(op, "allow", f"{op.tool_name} is {level}", f"allow-{level}", level)

    def _decision(self, op, mode, reason, policy_id, level=None):  # type: ignore[no-untyped-def]
        return OperationDecision(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=level or op.safety_level,
            mode=mode,
            reason=reason,
            policy_ids=[f"{self.policy_set}#{policy_id}"],
        )
