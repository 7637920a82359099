"""Spec 001 Phase 4: a tool executes with the safest available method, headless_safe
first. The bridge's tools change the scene through the data API (``bpy.data``, bmesh),
never through operators that need a window's context; the only operators they call are
the file operators of ``wm``, which need none. Read from the source, so it runs without
Blender."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BRIDGE = Path(__file__).resolve().parents[3] / "services" / "bridge"
# Open, save and reset the file: window-manager operators that run without any UI context.
FILE_OPERATORS = {"open_mainfile", "save_as_mainfile", "read_factory_settings"}
# Bones exist only in edit mode and automatic weights only as an operator: the rig tools
# run these two without a window, on the objects made active for the call (rigs.py), and
# tests/integration/test_bridge_output_tools.py runs them in a background Blender.
WINDOWLESS = {"rigs.py": {"bpy.ops.object.mode_set", "bpy.ops.object.parent_set"}}


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def operator_calls(source: str) -> list[str]:
    """Every ``bpy.ops.<group>.<operator>`` a module names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name.startswith("bpy.ops.") and name.count(".") == 3:
                found.append(name)
    return found


def declared_modes(source: str) -> list[str]:
    """The ``safety_mode`` every ``@tool(...)`` in a module declares (default headless_safe)."""
    modes = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and _dotted(node.func) in {"tool", "registry.tool"}:
            given = [k.value for k in node.keywords if k.arg == "safety_mode"]
            modes += [g.value if isinstance(g, ast.Constant) else "?" for g in given] or [
                "headless_safe"
            ]
    return modes


def tool_modules() -> list[Path]:
    shared = BRIDGE.parents[1] / "blendmesh_addon" / "tools"  # the bodies the add-on replays
    return [*sorted((BRIDGE / "tools").rglob("*.py")), *sorted(shared.glob("*.py"))]


def test_operator_scan_when_a_module_uses_a_ui_operator_finds_it() -> None:
    source = "import bpy\nbpy.ops.mesh.primitive_cube_add()\nbpy.ops.wm.save_as_mainfile()\n"
    assert operator_calls(source) == [
        "bpy.ops.mesh.primitive_cube_add",
        "bpy.ops.wm.save_as_mainfile",
    ]
    assert declared_modes("@tool(name='x', safety_mode='ui_assisted')\ndef f(): ...") == [
        "ui_assisted"
    ]


@pytest.mark.clause("001-§execute.1", "001-§safety-modes.2")
def test_bridge_tools_when_they_change_the_scene_use_data_api_not_ui_operators() -> None:
    modules = tool_modules()
    assert len(modules) > 10
    wrong = [
        f"{path.relative_to(BRIDGE)}: {call}"
        for path in modules
        for call in operator_calls(path.read_text())
        if not (call.startswith("bpy.ops.wm.") and call.rsplit(".", 1)[1] in FILE_OPERATORS)
        and call not in WINDOWLESS.get(path.name, set())
    ]
    assert wrong == []


@pytest.mark.clause("001-§safety-modes.1", "001-§execute.1")
def test_every_bridge_tool_is_headless_safe() -> None:
    modes = [mode for path in tool_modules() for mode in declared_modes(path.read_text())]
    assert len(modes) > 20  # the scan finds the registered tools
    assert set(modes) == {"headless_safe"}
