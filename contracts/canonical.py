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
    # The exact types JSON decodes to first: ``blendmesh audit rebuild`` hashes the args
    # of every planned operation in the log, and the general checks below cost it most.
    kind = type(value)
    if kind is str or value is None or kind is bool:
        return value
    if kind is float or kind is int:
        return _number(value)
    if kind is dict:
        return {k if type(k) is str else str(k): canonical(v) for k, v in value.items()}
    if kind is list:
        return [canonical(v) for v in value]
    return _canonical_other(value)


def _number(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {value!r}")
    rounded = round(float(value), FLOAT_DIGITS)
    return 0.0 if rounded == 0 else rounded


def _canonical_other(value: Any) -> Any:
    """Subclasses of the JSON types, tuples and Structs."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return _number(value)
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
