"""A tool that crashes answers with its error alone: no traceback, no host folder."""

from __future__ import annotations

from typing import Any

from services.bridge import registry
from services.bridge.registry import Outcome

NAME = "test.crashes_in_blender"
CRASH = (
    "Error: Python: Traceback (most recent call last):\n"
    '  File "/srv/blendmesh/.venv/lib/python3.11/site-packages/bpy/5.0/scripts/x.py", line 3\n'
    "KeyError: 'Cube'\n"
    "Location: /srv/blendmesh/.venv/lib/python3.11/site-packages/bpy/5.0/ops.py:109"
)


def _crash(args: dict[str, Any]) -> Outcome:
    raise RuntimeError(CRASH)


def test_call_when_a_tool_raises_a_traceback_answers_its_last_line_without_folders() -> None:
    registry.tool(
        name=NAME,
        description=NAME,
        safety_level="read_only",
        idempotence_class="idempotent",
        compensation="none",
        input_schema={"type": "object", "additionalProperties": False, "properties": {}},
    )(_crash)
    try:
        result = registry.call(NAME, {}, (5, 0, 1))
    finally:
        registry.REGISTRY.pop(NAME, None)
    assert not result.ok and result.error_code == "internal_error"
    assert result.message == "RuntimeError: Error: Python: KeyError: 'Cube'"
