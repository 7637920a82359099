"""Every exception blendmesh defines derives from one root, ``BlendmeshError``.

Read from the source, not imported: the bridge's modules import ``bpy``, which only a
Blender process may.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

from contracts.errors import BlendmeshError

ROOT = Path(__file__).resolve().parents[3]
BUILTIN_ERRORS = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)
}
# Raised inside the confined Blender of a Python step, which imports as little as it can.
OUTSIDE_THE_ROOT = "services/bridge/sandbox/"


def _classes_on_builtin_errors() -> list[str]:
    found = []
    for package in ("services", "contracts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            if where.startswith(OUTSIDE_THE_ROOT):
                continue
            for node in ast.walk(ast.parse(path.read_text(), where)):
                if isinstance(node, ast.ClassDef) and node.name != "BlendmeshError":
                    names = [b.id for b in node.bases if isinstance(b, ast.Name)]
                    if any(n in BUILTIN_ERRORS for n in names) and "BlendmeshError" not in names:
                        found.append(f"{where}:{node.lineno} {node.name}")
    return found


def test_every_error_blendmesh_defines_derives_from_the_root() -> None:
    assert _classes_on_builtin_errors() == []


def test_an_error_keeps_the_builtin_class_callers_caught_before() -> None:
    from services.runtime.service.settings import SettingsError

    assert issubclass(SettingsError, BlendmeshError) and issubclass(SettingsError, ValueError)
