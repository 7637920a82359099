"""Canonical JSON and its hash, so two services agree on "the same request" byte for byte.

Numbers are normalized the way the executor's journal normalizes args (floats rounded to
9 places, -0 is 0) and keys are sorted. It lives in ``contracts`` because the policy, the
clients and the gateway all compute the hash of a pending approval and must agree.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import msgspec

FLOAT_DIGITS = 9


def canonical(value: Any) -> Any:
    """The value with every number a rounded float; raises ValueError on NaN or infinity."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r}")
        rounded = round(float(value), FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return canonical(msgspec.to_builtins(value))
    raise TypeError(f"unsupported value {value!r}")


def canonical_json(value: Any) -> bytes:
    return msgspec.json.encode(canonical(value), order="sorted")


def canonical_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
