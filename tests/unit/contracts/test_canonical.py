"""Canonical JSON is compared byte for byte across services and with hashes already in
the audit views, so its output is pinned here, for the JSON types and the others alike."""

from __future__ import annotations

import enum

import msgspec
import pytest

from contracts.canonical import canonical_hash, canonical_json


class Level(enum.IntEnum):
    TWO = 2


class Key(str):
    pass


class Point(msgspec.Struct):
    x: float
    tags: tuple[float | str, ...]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"b": 1, "a": [-0.0, 1e-10, 2, 0.1234567891234], 3: True, "n": None},
            b'{"3":true,"a":[0.0,0.0,2.0,0.123456789],"b":1.0,"n":null}',
        ),
        (
            [Level.TWO, (1, "x"), Point(x=-0.0, tags=(1.5, "t")), {Key("k"): [True, False]}],
            b'[2.0,[1.0,"x"],{"tags":[1.5,"t"],"x":0.0},{"k":[true,false]}]',
        ),
    ],
)
def test_canonical_json_when_types_vary_gives_pinned_bytes(value: object, expected: bytes) -> None:
    assert canonical_json(value) == expected


def test_canonical_hash_when_args_are_a_plans_gives_pinned_hash() -> None:
    args = {"primitive": "cube", "name": "Obj00", "location": [0.0, 1.0, 0.0]}
    assert canonical_hash(args) == (
        "sha256:c8e7d42996ee0426693eea7276a941279c651dab60d4a93d21a781a029eb584b"
    )


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (float("nan"), ValueError, "non-finite number nan"),
        ([1, float("inf")], ValueError, "non-finite number inf"),
        ({"a": {1, 2}}, TypeError, r"unsupported value \{1, 2\}"),
    ],
)
def test_canonical_json_when_value_has_no_json_form_raises(
    value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        canonical_json(value)
