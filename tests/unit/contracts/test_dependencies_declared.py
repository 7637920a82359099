"""Every package the product imports is one pyproject.toml declares.

An import that only works because another dependency happens to pull its package in
breaks the day that dependency changes its own requirements.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PRODUCT = ("services", "contracts", "blendmesh_addon")
# Modules that live inside the bpy wheel itself rather than in a distribution of their own.
INSIDE_BPY = {
    "addon_utils",
    "bmesh",
    "bpy_extras",
    "mathutils",
    "gpu",
    "gpu_extras",
    "idprop",
    "aud",
    "blf",
    "freestyle",
}


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        listed.extend(extra)
    return {_normal(re.split(r"[<>=!~;\[ ]", entry, maxsplit=1)[0]) for entry in listed}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported() -> dict[str, str]:
    """Top-level module name -> one file that imports it, for absolute imports only."""
    found: dict[str, str] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_declared_in_pyproject() -> None:
    declared = _declared()
    owners = packages_distributions()
    undeclared = []
    for module, where in sorted(_imported().items()):
        if module in sys.stdlib_module_names or module in PRODUCT or module in INSIDE_BPY:
            continue
        if not {_normal(d) for d in owners.get(module, [])} & declared:
            undeclared.append(f"{module} (imported by {where})")
    assert not undeclared, "declare these in pyproject.toml: " + ", ".join(undeclared)


def test_the_declared_check_notices_a_missing_package() -> None:
    # The check above means something only if a real import maps to a declared name.
    owners = packages_distributions()
    assert _normal(owners["msgspec"][0]) in _declared()
    assert not {_normal(d) for d in owners.get("_surely_not_a_module_", [])} & _declared()
