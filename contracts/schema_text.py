"""One rule for the text of every published schema."""

from __future__ import annotations

import inspect
from typing import Any


def dedented(value: Any) -> Any:
    """``value`` with every description a docstring gave dedented: msgspec 0.23 dedents
    them and 0.22 does not, and what is published must not depend on which is installed."""
    if isinstance(value, dict):
        return {
            k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else dedented(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [dedented(v) for v in value]
    return value
