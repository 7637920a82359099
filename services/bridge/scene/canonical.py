"""How the canonical snapshot spells numbers and JSON, shared by every part of it."""

from __future__ import annotations

import json
from typing import Any

DECIMALS = 6


def r(value: float) -> float:
    """Round a float canonically; adding 0.0 turns -0.0 into 0.0."""
    return round(float(value), DECIMALS) + 0.0


def rvec(values: Any) -> list[float]:
    """Round every component of a vector."""
    return [r(v) for v in values]


def canonical_json(value: Any) -> str:
    """The one JSON encoding used for hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
