"""The rules grammar's forms for the artist tools (cameras, lights, world, collections,
copies, keyframes, ...), each planned against a small known scene."""

from __future__ import annotations

from typing import Any

import pytest

from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.fixtures.artist_requests import CAR, RING, STUDIO, thing
from tests.support.artist_scene import catalog, summary

SCENE = summary((*STUDIO, *CAR[1:], *RING, thing("Crate", "cube", (5, 5, 0), "BEVEL")))
CATALOG = catalog()
REL = {"mode": "relative"}


def planned(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (op.tool_name, op.args) for op in plan_request(text, "r", CATALOG, None, SCENE).operations
    ]


@pytest.mark.parametrize(
    ("text", "ops"),
    [
        (
            "add a geometry nodes modifier to Box using the node group Scatter",
            [("modifier.add", {"object": "Box", "type": "NODES", "node_group": "Scatter"})],
        ),
        (
            "add a camera named Top at 0 0 20 looking at the origin",
            [
                (
                    "camera.create",
                    {"name": "Top", "location": [0, 0, 20], "look_at_point": [0, 0, 0]},
                )
            ],
        ),
        (
            "add a camera facing Box",
            [("camera.create", {"name": "Camera.001", "look_at_object": "Box"})],
        ),
        ("aim Camera at 1 2 3", [("camera.set", {"name": "Camera", "look_at_point": [1, 2, 3]})]),
        (
            "add a blue spotlight named Spot1 at 0 0 5 with power 800 size 0.5",
            [
                (
                    "light.create",
                    {
                        "kind": "spot",
                        "name": "Spot1",
                        "location": [0, 0, 5],
                        "power": 800,
                        "color": [0.0, 0.0, 1.0],
                        "size": 0.5,
                    },
                )
            ],
        ),
        ("add a sun please", [("light.create", {"kind": "sun", "name": "Sun"})]),
        (
            "can you add a cool point light with 100 W",
            [
                (
                    "light.create",
                    {
                        "kind": "point",
                        "name": "Point",
                        "power": 100,
                        "color": [0.5906, 0.7011, 1.0],
                    },
                )
            ],
        ),
        ("set Key power to 250", [("light.set", {"name": "Key", "power": 250})]),
        ("set the size of Key to 2", [("light.set", {"name": "Key", "size": 2})]),
        (
            "make the sky white with strength 2",
            [("world.set", {"color": [1.0, 1.0, 1.0], "strength": 2})],
        ),
        ("use Camera as the active camera", [("camera.set_active", {"name": "Camera"})]),
        (
            "create a collection named Props in Scene",
            [("collection.create", {"name": "Props", "parent": "Scene"})],
        ),
        (
            "move Box to the Props collection",
            [("collection.move", {"objects": ["Box"], "collection": "Props"})],
        ),
        ("unparent Wheel", [("object.unparent", {"name": "Wheel"})]),
        ("clear the parent of Wheel", [("object.unparent", {"name": "Wheel"})]),
        (
            "make Box invisible",
            [("object.visibility", {"name": "Box", "viewport": False, "render": False})],
        ),
        ("show Box in renders", [("object.visibility", {"name": "Box", "render": True})]),
        ("make Ring flat shaded", [("object.shade", {"name": "Ring", "smooth": False})]),
        (
            "make 2 linked copies of Ball along y spaced 4",
            [
                (
                    "object.duplicate",
                    {"name": "Ball", "new_name": "Ball.001", "linked": True, "offset": [0, 4, 0]},
                ),
                (
                    "object.duplicate",
                    {"name": "Ball", "new_name": "Ball.002", "linked": True, "offset": [0, 8, 0]},
                ),
            ],
        ),
        (
            "duplicate Ball named Ball2",
            [("object.duplicate", {"name": "Ball", "new_name": "Ball2"})],
        ),
        (
            "apply all modifiers on Crate",
            [("modifier.apply", {"object": "Crate", "modifier": "Bevel"})],
        ),
        (
            "keyframe the rotation of Ring at frame 5",
            [("keyframe.insert", {"name": "Ring", "property": "rotation", "frame": 5})],
        ),
        (
            "go to frame 10, keyframe Box",
            [
                ("keyframe.insert", {"name": "Box", "property": p, "frame": 10})
                for p in ("location", "rotation", "scale")
            ],
        ),
        ("halve Ball", [("object.transform", {"name": "Ball", "scale": [0.5, 0.5, 0.5], **REL})]),
        (
            "scale Box down by 2",
            [("object.transform", {"name": "Box", "scale": [0.5, 0.5, 0.5], **REL})],
        ),
        (
            "make Box 3 times smaller",
            [("object.transform", {"name": "Box", "scale": [0.333333] * 3, **REL})],
        ),
        (
            "move Box by 1 0 0",
            [("object.transform", {"name": "Box", "location": [1, 0, 0], **REL})],
        ),
        (
            "move Box along y by 2",
            [("object.transform", {"name": "Box", "location": [0, 2, 0], **REL})],
        ),
        (
            "clear the scene",
            [("object.delete", {"name": n}) for n in sorted(o.name for o in SCENE.objects)],
        ),
    ],
)
def test_artist_form_when_planned_gives_the_operations(text: str, ops: list[Any]) -> None:
    assert planned(text) == ops


def test_apply_when_object_has_no_known_modifier_is_refused() -> None:
    with pytest.raises(UnreadableRequest, match='I do not know of any modifier on "Car"'):
        plan_request("apply all modifiers on Car", "r", CATALOG, None, summary(CAR))
