"""The add-on names a shot's libraries and bounds them as the mesh does: a push it sends
is never refused for a name or a size the add-on could have known."""

from __future__ import annotations

import pytest

from blendmesh_addon import library_names
from contracts import libraries


def test_limits_when_compared_with_the_mesh_are_the_same() -> None:
    assert library_names.MAX_LIBRARIES == libraries.MAX_LIBRARIES
    assert library_names.MAX_LIBRARY_BYTES == libraries.MAX_LIBRARY_BYTES
    assert library_names.MAX_LIBRARIES_TOTAL_BYTES == libraries.MAX_LIBRARIES_TOTAL_BYTES


@pytest.mark.parametrize(
    "path",
    [
        "//lib/Characters.blend",
        "//../sets/Big Set (v2).BLEND",
        "C:\\shots\\props.blend",
        "/abs/path/to/ünïcode-lib.blend",
        "//lib/.blend",
        "//libraries/characters@2.blend",
    ],
)
def test_name_for_when_given_a_path_names_the_library_as_the_mesh_does(path: str) -> None:
    found = library_names.name_for(path)
    stored = libraries.parse_link(path)
    assert found == (stored[0] if stored else libraries.name_for(path.replace("\\", "/")))
    assert found == "" or libraries.is_name(found)
