"""The capability gate of spec 001 Phase 2: refuse a plan this runtime cannot honour,
before anything executes."""

from __future__ import annotations

from contracts.bridge import BlenderProfile
from contracts.failures import FailureContract, failure
from contracts.operations import Operation
from contracts.python_approvals import PYTHON_TOOLS
from contracts.tools import ToolCatalog

SANDBOX = "bubblewrap"  # BlenderProfile.sandbox where Python steps can run


def gate(
    ops: list[Operation],
    catalog: ToolCatalog,
    profile: BlenderProfile,
    allow_unsafe: bool = False,
) -> FailureContract | None:
    """The first refusal for the plan, or None when every tool can run here."""
    version = profile.version_tuple
    for op in ops:
        tool = catalog.get(op.tool_name)
        if tool is None:
            return failure(
                "CAPABILITY_MISSING",
                f"{op.tool_name} is not served by this bridge",
                recoverable=True,
                repair=[(op.operation_id, "replace_args")],
            )
        if version < tool.min_blender_version:
            need = ".".join(map(str, tool.min_blender_version))
            have = ".".join(map(str, version))
            return failure(
                "CAPABILITY_MISSING",
                f"{op.tool_name} needs Blender {need}; this bridge runs {have}",
                recoverable=False,
                repair=[(op.operation_id, "drop")],
            )
        if tool.safety_mode == "ui_assisted" and profile.background:
            return failure(
                "CAPABILITY_MISSING",
                f"{op.tool_name} needs Blender's UI; executors run headless",
                recoverable=False,
                repair=[(op.operation_id, "drop")],
            )
        if op.tool_name in PYTHON_TOOLS and profile.sandbox != SANDBOX:
            return failure(
                "CAPABILITY_MISSING",
                f"{op.tool_name} needs the bubblewrap OS sandbox, which this executor's "
                "Blender bridge cannot start; Python steps never run unconfined (install "
                "the Debian package bubblewrap, or plan without Python)",
                recoverable=False,
                repair=[(op.operation_id, "drop")],
            )
        if tool.safety_mode == "unsafe_ops" and not allow_unsafe:
            return failure(
                "POLICY_BLOCKED",
                f"{op.tool_name} is unsafe_ops and this executor does not opt in",
                recoverable=True,
                repair=[(op.operation_id, "drop")],
            )
    return None
