"""No production module grows past 400 lines (docs/architecture.md, "Small modules").

A module that long has started doing two jobs; splitting it is easiest the day it
crosses the line, before other modules import its second job from it.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contracts", "services", "blendmesh_addon")
LIMIT = 400


def _long_modules() -> dict[str, int]:
    sizes = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > LIMIT:
                sizes[str(path.relative_to(ROOT))] = lines
    return sizes


def test_production_modules_when_counted_are_at_most_400_lines() -> None:
    assert _long_modules() == {}, f"split these modules (over {LIMIT} lines)"


def test_the_count_when_packages_exist_sees_their_modules() -> None:
    # Guards the test above against a moved tree, where it would pass on nothing.
    counted = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    assert len(counted) > 300
