"""A glTF's declared sizes against the bytes it holds: every bomb a few hundred bytes long
that made Blender's importer allocate gigabytes is refused before Blender reads it."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from contracts.assets import asset_problem
from contracts.gltf_sizes import EXPANSION
from tests.support.asset_files import POSITIONS, glb, gltf_document, gltf_embedded


def _doc(**accessor: Any) -> dict[str, Any]:
    doc = gltf_document()
    doc["accessors"][0].update(accessor)
    return doc


def _refusal(data: bytes, fmt: str) -> str:
    problem = asset_problem(data, fmt, "bomb." + fmt)
    assert problem is not None
    assert "export it again" in problem
    return problem


def test_gltf_when_sizes_are_backed_is_accepted() -> None:
    assert asset_problem(glb(), "glb", "tri.glb") is None
    assert asset_problem(gltf_embedded(), "gltf", "tri.gltf") is None


@pytest.mark.parametrize("count", [3_000_000_000, 4, 10**6])
def test_glb_when_accessor_count_is_more_than_its_view_holds_is_refused(count: int) -> None:
    problem = _refusal(glb(_doc(count=count)), "glb")
    assert f"accessors[0] declares {count:,} elements, more than its buffer view holds" in problem


def test_gltf_text_of_300_bytes_claiming_three_billion_vertices_is_refused() -> None:
    uri = "data:application/octet-stream;base64," + base64.b64encode(POSITIONS).decode()
    doc = gltf_document(buffer_uri=uri)
    doc["accessors"][0]["count"] = 3e9  # as the attack wrote it: a JSON number
    data = json.dumps(doc, separators=(",", ":")).encode()
    assert len(data) < 600
    assert "accessors[0].count is not a whole number" in _refusal(data, "gltf")


def test_gltf_when_accessor_without_a_view_claims_millions_of_zeros_is_refused() -> None:
    doc = _doc(count=3_000_000)
    del doc["accessors"][0]["bufferView"]
    problem = _refusal(glb(doc), "glb")
    assert "36,000,000 bytes of data (36,000,000 of them with no data behind them)" in problem


def test_glb_when_buffer_claims_more_than_its_binary_chunk_is_refused() -> None:
    doc = gltf_document()
    doc["buffers"][0]["byteLength"] = 10**9
    assert "buffers[0] declares 1,000,000,000 bytes but the file holds 36" in _refusal(
        glb(doc), "glb"
    )


def test_gltf_when_data_uri_holds_less_than_declared_is_refused() -> None:
    doc = json.loads(gltf_embedded())
    doc["buffers"][0]["byteLength"] = 4096
    assert "declares 4,096 bytes but the file holds 36" in _refusal(
        json.dumps(doc).encode(), "gltf"
    )
    doc["buffers"][0]["uri"] = "data:application/octet-stream;base64,@@@"
    assert "not valid base64" in _refusal(json.dumps(doc).encode(), "gltf")


def test_glb_when_view_runs_past_its_buffer_is_refused() -> None:
    doc = gltf_document()
    doc["bufferViews"][0]["byteOffset"] = 8
    assert "bufferViews[0] runs past the end of its buffer" in _refusal(glb(doc), "glb")


def test_glb_when_stride_spreads_the_elements_past_the_view_is_refused() -> None:
    doc = gltf_document()
    doc["bufferViews"][0]["byteStride"] = 32
    assert "more than its buffer view holds" in _refusal(glb(doc), "glb")


def test_glb_when_many_accessors_share_one_view_is_refused() -> None:
    binary = b"\0" * (1 << 20)
    doc = gltf_document()
    doc["buffers"][0]["byteLength"] = len(binary)
    doc["bufferViews"][0]["byteLength"] = len(binary)
    one = {"bufferView": 0, "componentType": 5126, "count": len(binary) // 12, "type": "VEC3"}
    doc["accessors"] = [dict(one) for _ in range(EXPANSION * 3)]
    problem = _refusal(glb(doc, binary), "glb")
    assert f"({EXPANSION} bytes for each byte of the file)" in problem


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"count": -1}, "accessors[0].count is not a whole number of at least 1"),
        ({"count": True}, "accessors[0].count is not a whole number"),
        ({"count": "3"}, "accessors[0].count is not a whole number"),
        ({"componentType": 5130}, "accessors[0] has an unknown componentType or type"),
        ({"type": "VEC9"}, "accessors[0] has an unknown componentType or type"),
        ({"bufferView": 7}, "more than its buffer view holds"),
        ({"sparse": {"count": 10}}, "accessors[0].sparse.count is more than the accessor's"),
        ({"sparse": []}, "accessors[0].sparse is not an object"),
    ],
)
def test_glb_when_an_accessor_is_malformed_names_it(change: dict[str, Any], said: str) -> None:
    assert said in _refusal(glb(_doc(**change)), "glb")


def test_glb_when_lists_are_not_lists_or_too_long_is_refused() -> None:
    doc = gltf_document()
    doc["accessors"] = {"0": {}}
    assert "'accessors' is not a list" in _refusal(glb(doc), "glb")
    doc = gltf_document()
    doc["bufferViews"] = [None]
    assert "bufferViews[0] is not an object" in _refusal(glb(doc), "glb")


@pytest.mark.parametrize(
    ("children", "said"),
    [
        ([[0]], "nodes[0] lists node 0, which cannot be its child"),
        ([[1], [0]], "is its own ancestor: the node tree has a loop"),
        ([[1], [2], [1]], "lists node 1, which cannot be its child"),  # two parents
        ([[5]], "nodes[0] lists node 5, which cannot be its child"),
        ([["1"]], "nodes[0].children is not a whole number"),
    ],
)
def test_gltf_when_nodes_do_not_form_trees_is_refused(children: list[Any], said: str) -> None:
    doc = gltf_document()
    doc["nodes"] = [{"children": c} for c in children]
    assert said in _refusal(glb(doc), "glb")


def test_gltf_when_a_long_chain_of_nodes_is_checked_in_one_pass() -> None:
    doc = gltf_document()
    count = 200_000
    doc["nodes"] = [{"children": [i + 1]} for i in range(count - 1)] + [{"mesh": 0}]
    assert asset_problem(glb(doc), "glb", "deep.glb") is None
