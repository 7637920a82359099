"""The bridge's tool declarations, read from their source: the tools run only in Blender (they
import bpy), so a fast test reads what they declare without importing them. Unit tests of the
planner and policy run on tests/support/catalog_fixture.py, which must declare the same levels."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.catalog_fixture import CATALOG

TOOLS = Path(__file__).resolve().parents[3] / "services" / "bridge" / "tools"
READ = ("name", "safety_level", "safety_mode", "determinism_class")


def declared() -> dict[str, dict[str, object]]:
    """Tool name -> the literal fields of its ``@tool(...)`` declaration."""
    found: dict[str, dict[str, object]] = {}
    for path in sorted(TOOLS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "tool":
                    fields = {
                        kw.arg: ast.literal_eval(kw.value)
                        for kw in deco.keywords
                        if kw.arg in READ and isinstance(kw.value, ast.Constant)
                    }
                    found[str(fields["name"])] = fields
    return found


def test_declarations_when_read_find_the_bridge_tools() -> None:
    tools = declared()
    assert {"object.create", "object.delete", "python.safe", "python.trusted"} <= set(tools)


@pytest.mark.clause("004-§python.3", "000-§planner-schema.9")
def test_trusted_python_when_declared_is_destructive_so_a_person_approves_it() -> None:
    assert declared()["python.trusted"]["safety_level"] == "destructive"


@pytest.mark.clause("000-§planner-schema.9")
def test_catalog_fixture_when_it_names_a_bridge_tool_declares_its_safety_level() -> None:
    tools = declared()
    shared = [t for t in CATALOG.tools if t.name in tools and "safety_level" in tools[t.name]]
    assert shared
    assert {t.name: t.safety_level for t in shared} == {
        t.name: tools[t.name]["safety_level"] for t in shared
    }
