"""What a glTF says its data is, held against what the file holds, before Blender reads it.

A glTF accessor says how many elements it has (``count``) and where they are (a buffer
view of a buffer); Blender's importer believes it and allocates that much. A 293-byte
file with ``count: 3e9`` held a bridge at 6.3 GiB for a minute. Here every size the
document declares is checked against the bytes really there: each buffer against its
embedded data (a ``data:`` URI, or the GLB's binary chunk), each view against its buffer,
each accessor against its view (its stride and offset included), and the sum of what all
accessors declare against the file's size, so views shared by many accessors cannot
multiply it either. An accessor with no view is zeros the importer makes up: those count
against the file's size too. Pure: JSON and numbers in, a reason out.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from contracts.errors import BlendmeshError

COMPONENT_BYTES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
TYPE_COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
# Declared element bytes per byte of the file. An exporter writes each accessor's data
# once, so a real file declares at most about its own size.
EXPANSION = 4
SLACK = 1024 * 1024  # what a tiny file may declare all the same
MAX_ITEMS = 1_000_000  # accessors, views or buffers in one document
_EXPORT_AGAIN = "export it again from the program that made it"


class SizeProblem(BlendmeshError, ValueError):
    """A declared size the file does not back: the message names where and by how much."""


def _whole(value: object, where: str, least: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise SizeProblem(f"{where} is not a whole number of at least {least}")
    return value


def _items(doc: dict[str, Any], key: str) -> list[Any]:
    items = doc.get(key, [])
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        raise SizeProblem(f"'{key}' is not a list of at most {MAX_ITEMS:,} entries")
    return items


def _data_uri_bytes(uri: str) -> int:
    """How many bytes a ``data:`` URI holds (base64, or percent-free plain text)."""
    head, _, body = uri.partition(",")
    if not head.endswith(";base64"):
        return len(body)
    try:
        return len(base64.b64decode(body, validate=True))
    except (binascii.Error, ValueError):
        raise SizeProblem("a buffer's data: URI is not valid base64") from None


def _buffers(doc: dict[str, Any], binary: int | None) -> list[int]:
    """Each buffer's declared length, checked against the bytes it really has."""
    lengths = []
    for i, buffer in enumerate(_items(doc, "buffers")):
        if not isinstance(buffer, dict):
            raise SizeProblem(f"buffers[{i}] is not an object")
        declared = _whole(buffer.get("byteLength"), f"buffers[{i}].byteLength", 1)
        uri = buffer.get("uri")
        held = _data_uri_bytes(uri) if isinstance(uri, str) else (binary if i == 0 else None)
        if held is None or declared > held:
            raise SizeProblem(
                f"buffers[{i}] declares {declared:,} bytes but the file holds {held or 0:,} for it"
            )
        lengths.append(declared)
    return lengths


def _views(doc: dict[str, Any], buffers: list[int]) -> list[tuple[int, int | None]]:
    """Each view's length and stride, checked to lie inside its buffer."""
    views = []
    for i, view in enumerate(_items(doc, "bufferViews")):
        if not isinstance(view, dict):
            raise SizeProblem(f"bufferViews[{i}] is not an object")
        buffer = _whole(view.get("buffer"), f"bufferViews[{i}].buffer")
        offset = _whole(view.get("byteOffset", 0), f"bufferViews[{i}].byteOffset")
        length = _whole(view.get("byteLength"), f"bufferViews[{i}].byteLength", 1)
        stride = view.get("byteStride")
        if stride is not None:
            stride = _whole(stride, f"bufferViews[{i}].byteStride", 4)
        if buffer >= len(buffers) or offset + length > buffers[buffer]:
            raise SizeProblem(f"bufferViews[{i}] runs past the end of its buffer")
        views.append((length, stride))
    return views


def _span(view: tuple[int, int | None], offset: int, count: int, element: int) -> int:
    stride = view[1]
    return offset + (stride or element) * (count - 1) + element


def _accessor(accessor: Any, where: str, views: list[tuple[int, int | None]]) -> tuple[int, int]:
    """The bytes an accessor declares, and of those the ones no view backs (zeros)."""
    if not isinstance(accessor, dict):
        raise SizeProblem(f"{where} is not an object")
    count = _whole(accessor.get("count"), f"{where}.count", 1)
    kind, shape = accessor.get("componentType"), accessor.get("type")
    size = COMPONENT_BYTES.get(kind) if isinstance(kind, int) else None
    components = TYPE_COMPONENTS.get(shape) if isinstance(shape, str) else None
    if size is None or components is None:
        raise SizeProblem(f"{where} has an unknown componentType or type")
    element = size * components
    declared = count * element
    view = accessor.get("bufferView")
    if view is None:
        zeros = declared
    else:
        index = _whole(view, f"{where}.bufferView")
        offset = _whole(accessor.get("byteOffset", 0), f"{where}.byteOffset")
        if index >= len(views) or _span(views[index], offset, count, element) > views[index][0]:
            raise SizeProblem(
                f"{where} declares {count:,} elements, more than its buffer view holds"
            )
        zeros = 0
    sparse = accessor.get("sparse")
    if sparse is not None:
        if not isinstance(sparse, dict):
            raise SizeProblem(f"{where}.sparse is not an object")
        _whole(sparse.get("count"), f"{where}.sparse.count", 1)
        if sparse["count"] > count:
            raise SizeProblem(f"{where}.sparse.count is more than the accessor's count")
    return declared, zeros


def _node_tree(doc: dict[str, Any]) -> None:
    """glTF's nodes form trees: each child a valid index with one parent, and no node its
    own ancestor (Blender's importer recurses for ever on a cycle)."""
    nodes = _items(doc, "nodes")
    parent: dict[int, int] = {}
    for i, node in enumerate(nodes):
        children = node.get("children", []) if isinstance(node, dict) else None
        if not isinstance(children, list):
            raise SizeProblem(f"nodes[{i}] is not an object with a list of children")
        for child in children:
            index = _whole(child, f"nodes[{i}].children")
            if index >= len(nodes) or index in parent or index == i:
                raise SizeProblem(f"nodes[{i}] lists node {index}, which cannot be its child")
            parent[index] = i
    rooted: set[int] = set()  # nodes whose chain of parents is known to end at a root
    for start in range(len(nodes)):  # with one parent each, a cycle is a loop of parents
        walked, at = {start}, start
        while at in parent and at not in rooted:
            at = parent[at]
            if at in walked:
                raise SizeProblem(f"nodes[{at}] is its own ancestor: the node tree has a loop")
            walked.add(at)
        rooted |= walked


def gltf_size_problem(doc: dict[str, Any], file_bytes: int, binary: int | None) -> str | None:
    """Why the sizes ``doc`` declares are not backed by the file (``file_bytes`` long, with
    a GLB binary chunk of ``binary`` bytes or none); None when every one is."""
    try:
        _node_tree(doc)
        views = _views(doc, _buffers(doc, binary))
        declared = zeros = 0
        for i, accessor in enumerate(_items(doc, "accessors")):
            more, more_zeros = _accessor(accessor, f"accessors[{i}]", views)
            declared, zeros = declared + more, zeros + more_zeros
    except SizeProblem as err:
        return f"{err}; {_EXPORT_AGAIN}"
    allowed = EXPANSION * file_bytes + SLACK
    if declared > allowed or zeros > file_bytes + SLACK:
        return (
            f"its accessors declare {declared:,} bytes of data ({zeros:,} of them with no "
            f"data behind them) for a file of {file_bytes:,} bytes: more than an exporter "
            f"writes ({EXPANSION} bytes for each byte of the file); {_EXPORT_AGAIN}"
        )
    return None
