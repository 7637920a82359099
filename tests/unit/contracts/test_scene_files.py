"""What counts as a .blend file, and the artist's summary of a scene."""

from __future__ import annotations

import gzip

import zstandard

from contracts.inspection import InspectedModifier, InspectedObject, Inspection, RunRecord
from contracts.scene_files import blend_problem, blob_id, is_blob_id
from contracts.scene_report import MAX_REPORTED_OBJECTS, report_lines, scene_report

HEADER = b"BLENDER-v500RENDH"


def test_blend_problem_when_plain_or_compressed_blend_is_none() -> None:
    assert blend_problem(HEADER, "a.blend") is None
    assert blend_problem(gzip.compress(HEADER * 10), "a.blend") is None
    assert blend_problem(zstandard.ZstdCompressor().compress(HEADER * 10), "a.blend") is None


def test_blend_problem_when_not_a_blend_names_the_file() -> None:
    assert "x.png is not a .blend" in (blend_problem(b"\x89PNG....", "x.png") or "")
    assert "is empty" in (blend_problem(b"", "x.blend") or "")
    assert "not a .blend" in (blend_problem(gzip.compress(b"hello"), "x.gz") or "")
    broken_zstd = b"\x28\xb5\x2f\xfd" + b"\x00" * 20
    assert "not a .blend" in (blend_problem(broken_zstd, "x.zst") or "")


def test_blob_id_when_made_from_bytes_is_a_valid_blob() -> None:
    assert is_blob_id(blob_id(b"data")) and not is_blob_id("sha256:xyz")


def _inspection(objects: list[InspectedObject]) -> Inspection:
    return Inspection(
        scene_id="s",
        revision=2,
        scene_hash="f" * 64,
        blender_version="5.0.1",
        objects=objects,
        run=RunRecord(run_id="run-1", user="ana", approved_by="policy"),
    )


def test_report_when_scene_has_objects_lists_transforms_modifiers_lights_cameras() -> None:
    box = InspectedObject(
        name="Box",
        type="MESH",
        location=[0.0, 0.0, 1.0],
        rotation_euler=[0.0, 0.0, 1.5707963],
        scale=[1.0, 1.0, 1.0],
        modifiers=[InspectedModifier(name="Bevel", type="BEVEL")],
        materials=["Red"],
    )
    sun = InspectedObject(name="Sun", type="LIGHT")
    cam = InspectedObject(name="Cam", type="CAMERA")
    report = scene_report(_inspection([sun, box, cam]))
    assert report["types"] == {"CAMERA": 1, "LIGHT": 1, "MESH": 1}
    assert report["lights"] == ["Sun"] and report["cameras"] == ["Cam"]
    text = "\n".join(report_lines(report))
    assert "Box [MESH] at (0, 0, 1) rot (0, 0, 90) scale (1, 1, 1)" in text
    assert "modifiers Bevel:BEVEL materials Red" in text
    assert "last change: run run-1 by ana" in text


def test_report_when_scene_is_huge_lists_a_bounded_number_of_objects() -> None:
    many = [
        InspectedObject(name=f"o{i:05d}", type="EMPTY") for i in range(MAX_REPORTED_OBJECTS + 3)
    ]
    report = scene_report(_inspection(many))
    assert len(report["objects"]) == MAX_REPORTED_OBJECTS and report["more_objects"] == 3
    assert report_lines(report)[-5] == "  ... and 3 more objects"
