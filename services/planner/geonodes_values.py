"""Geometry Nodes socket types and values: which links Blender keeps and which values a
socket or node property takes. Pure: no I/O.

Links follow Blender's implicit conversions (``CONVERTS``, measured with ``link.is_valid``
in Blender 5.0): geometry only to geometry; float, integer, boolean, vector and color
convert among themselves; rotation goes to vector, rotation and matrix, and comes from
float and vector; a matrix goes to rotation and matrix; every other type (string, menu,
object, collection, material, image, ...) links only to its own type.
"""

from __future__ import annotations

from typing import Any

from contracts.nodes import SocketSpec

_NUMERIC = {"VALUE", "INT", "BOOLEAN", "VECTOR", "RGBA"}
# Output socket type -> the input socket types a link from it may reach.
CONVERTS: dict[str, set[str]] = {
    "VALUE": _NUMERIC | {"ROTATION"},
    "INT": _NUMERIC,
    "BOOLEAN": _NUMERIC,
    "VECTOR": _NUMERIC | {"ROTATION"},
    "RGBA": _NUMERIC,
    "ROTATION": {"VECTOR", "ROTATION", "MATRIX"},
    "MATRIX": {"ROTATION", "MATRIX"},
}
# Socket idnames (NodeSocketFloatDistance, ...) and their type; the longest prefix wins.
IDNAME_KINDS = {
    "NodeSocketFloat": "VALUE",
    "NodeSocketInt": "INT",
    "NodeSocketBool": "BOOLEAN",
    "NodeSocketVector": "VECTOR",
    "NodeSocketColor": "RGBA",
    "NodeSocketRotation": "ROTATION",
    "NodeSocketMatrix": "MATRIX",
    "NodeSocketString": "STRING",
    "NodeSocketMenu": "MENU",
    "NodeSocketObject": "OBJECT",
    "NodeSocketCollection": "COLLECTION",
    "NodeSocketMaterial": "MATERIAL",
    "NodeSocketImage": "IMAGE",
    "NodeSocketTexture": "TEXTURE",
    "NodeSocketGeometry": "GEOMETRY",
    "NodeSocketShader": "SHADER",
    "NodeSocketBundle": "BUNDLE",
    "NodeSocketClosure": "CLOSURE",
}
_DATABLOCKS = {"OBJECT", "COLLECTION", "MATERIAL", "IMAGE", "TEXTURE"}
_VECTOR_SIZES = {"VECTOR": (2, 3, 4), "ROTATION": (3,), "RGBA": (3, 4)}


def socket_kind(type_name: str) -> str:
    """A socket type as Blender's ``socket.type`` spells it (``VALUE``, ``GEOMETRY``, ...),
    from that or from a socket idname (``NodeSocketFloatDistance``)."""
    if not type_name.startswith("NodeSocket"):
        return type_name.upper()
    best = max((k for k in IDNAME_KINDS if type_name.startswith(k)), key=len, default=None)
    return IDNAME_KINDS[best] if best else type_name.upper()


def links(from_kind: str | None, to_kind: str | None) -> bool:
    """Whether Blender keeps a link from an output of one type to an input of another
    (None: a type this check cannot know, let through)."""
    if from_kind is None or to_kind is None or from_kind == to_kind:
        return True
    return to_kind in CONVERTS.get(from_kind, set())


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def value_problem(kind: str, value: Any, socket: SocketSpec | None = None) -> str | None:
    """Why ``value`` cannot be the default value of a socket of type ``kind``; None when
    it can. Numbers are checked against the socket's hard range, and vectors against the
    length of its default, where the catalog has them (as the ``gn.set_input`` tool
    checks them: an integer socket takes 2.0 as 2)."""
    if kind in ("VALUE", "INT"):
        integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if not _number(value) or (kind == "INT" and not integral):
            what = "a whole number" if kind == "INT" else "a number"
            return f"needs {what}, not {_shown(value)}"
        return _range_problem(value, socket)
    if kind == "BOOLEAN":
        return None if isinstance(value, bool) else f"needs true or false, not {_shown(value)}"
    if kind in _VECTOR_SIZES:
        default = socket.default if socket is not None else None
        sizes = (len(default),) if isinstance(default, list) else _VECTOR_SIZES[kind]
        if not (isinstance(value, list) and len(value) in sizes and all(map(_number, value))):
            counts = " or ".join(str(n) for n in sizes)
            return f"needs a list of {counts} numbers ({kind}), not {_shown(value)}"
        return None
    if kind in ("STRING", "MENU"):
        return None if isinstance(value, str) else f"needs a string, not {_shown(value)}"
    if kind in _DATABLOCKS:
        if value is None or isinstance(value, str):
            return None
        return f"needs the name of a {kind.lower()} (or null), not {_shown(value)}"
    return f"a {kind} socket holds no value of its own: link a socket to it instead"


def _range_problem(value: float, socket: SocketSpec | None) -> str | None:
    low = socket.min if socket is not None else None
    high = socket.max if socket is not None else None
    if low is not None and value < low:
        return f"{value} is below the socket's minimum {low:g}"
    if high is not None and value > high:
        return f"{value} is above the socket's maximum {high:g}"
    return None


def property_problem(kind: str, value: Any) -> str | None:
    if kind == "BOOLEAN" and not isinstance(value, bool):
        return f"needs true or false, not {_shown(value)}"
    if kind == "INT" and not (
        _number(value) and (isinstance(value, int) or float(value).is_integer())
    ):
        return f"needs a whole number, not {_shown(value)}"
    if kind == "FLOAT" and not _number(value):
        return f"needs a number, not {_shown(value)}"
    if kind == "STRING" and not isinstance(value, str):
        return f"needs a string, not {_shown(value)}"
    if kind == "POINTER" and not (value is None or isinstance(value, str)):
        return f"needs a name (or null), not {_shown(value)}"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
