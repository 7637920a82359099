"""Small asset files for the import tests, written byte by byte (the test process never
imports bpy): a one-triangle glTF as GLB and as text, an OBJ, an STL and a USD stage, and
their hostile variants."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import zstandard

# One triangle: three float32 positions.
POSITIONS = struct.pack("<9f", 0, 0, 0, 1, 0, 0, 0, 1, 0)


def gltf_document(buffer_uri: str | None = None, image_uri: str | None = None) -> dict[str, Any]:
    """A glTF 2.0 document of one triangle named ``Tri``; its buffer at ``buffer_uri``
    (embedded in the GLB when None), and an image at ``image_uri`` when given."""
    buffer: dict[str, Any] = {"byteLength": len(POSITIONS)}
    if buffer_uri is not None:
        buffer["uri"] = buffer_uri
    doc: dict[str, Any] = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "name": "Tri"}],
        "meshes": [{"name": "Tri", "primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [buffer],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": len(POSITIONS)}],
        "accessors": [
            {
                "bufferView": 0,
                "componentType": 5126,
                "count": 3,
                "type": "VEC3",
                "min": [0, 0, 0],
                "max": [1, 1, 0],
            }
        ],
    }
    if image_uri is not None:
        doc["images"] = [{"uri": image_uri}]
    return doc


def glb(doc: dict[str, Any] | None = None, binary: bytes = POSITIONS) -> bytes:
    """``doc`` (the triangle by default) as a binary glTF with ``binary`` as its BIN chunk."""
    text = json.dumps(doc or gltf_document()).encode()
    text += b" " * (-len(text) % 4)
    binary += b"\0" * (-len(binary) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text
    chunks += struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def glb_with_image(png: bytes, name: str = "Scratches") -> bytes:
    """The triangle as a GLB whose material's base colour is ``png``, embedded in the BIN
    chunk (Blender imports it as a packed image named ``name``)."""
    pad = b"\0" * (-len(POSITIONS) % 4)
    doc = gltf_document()
    doc["buffers"][0]["byteLength"] = len(POSITIONS) + len(pad) + len(png)
    view = {"buffer": 0, "byteOffset": len(POSITIONS) + len(pad), "byteLength": len(png)}
    doc["bufferViews"].append(view)
    doc["images"] = [{"name": name, "bufferView": 1, "mimeType": "image/png"}]
    doc["textures"] = [{"source": 0}]
    pbr = {"baseColorTexture": {"index": 0}}
    doc["materials"] = [{"name": "Painted", "pbrMetallicRoughness": pbr}]
    doc["meshes"][0]["primitives"][0]["material"] = 0
    return glb(doc, POSITIONS + pad + png)


def gltf_embedded() -> bytes:
    """The triangle as a .gltf text with its buffer as a data: URI."""
    uri = "data:application/octet-stream;base64," + base64.b64encode(POSITIONS).decode()
    return json.dumps(gltf_document(buffer_uri=uri)).encode()


OBJ = b"o Quad\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n"
OBJ_WITH_LIBRARY = b"mtllib /etc/blendmesh-secret.mtl\n" + OBJ
STL = (
    b"\0" * 80
    + struct.pack("<I", 1)
    + struct.pack("<12fH", *([0.0] * 3), 0, 0, 0, 1, 0, 0, 0, 1, 0, 0)
)
USDA = (
    b"#usda 1.0\n\n"
    b'def Mesh "Tri"\n{\n'
    b"    int[] faceVertexCounts = [3]\n"
    b"    int[] faceVertexIndices = [0, 1, 2]\n"
    b"    point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]\n}\n"
)
USDA_WITH_REFERENCE = (
    b'#usda 1.0\n\ndef Xform "Set" (\n    references = @/srv/other/scene.usda@\n)\n{\n}\n'
)


def zstd_blend_bomb(path: Path, inflated: int) -> Path:
    """A small zstd .blend (Blender 5.0's header) whose one DATA block holds ``inflated``
    zero bytes, written as a stream: a 4 GiB one is about 130 KB."""
    head = b"BLENDER17-01v0500" + struct.pack("<4siQqq", b"DATA", 0, 0, inflated, 1)
    chunk = b"\0" * (1 << 20)
    with open(path, "wb") as out, zstandard.ZstdCompressor(level=1).stream_writer(out) as z:
        z.write(head)
        for _ in range(inflated // len(chunk)):
            z.write(chunk)
    return path


def points_glb(count: int) -> bytes:
    """A GLB of one mesh of ``count`` points (a POSITION accessor backed by real data)."""
    positions = struct.pack(f"<{3 * count}f", *(float(i % 7) for i in range(3 * count)))
    doc = gltf_document()
    doc["meshes"][0]["primitives"][0]["mode"] = 0  # POINTS
    doc["buffers"][0]["byteLength"] = len(positions)
    doc["bufferViews"][0]["byteLength"] = len(positions)
    doc["accessors"][0].update(count=count, max=[6, 6, 6])
    return glb(doc, positions)
