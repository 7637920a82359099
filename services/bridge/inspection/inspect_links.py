"""What an inspection says of a shot's linked libraries: which library revisions it links,
which one each linked or overriding object comes from, and which properties the shot
overrides (docs/studio.md, "Change lists and reviews")."""

from __future__ import annotations

from typing import Any

import bpy

from contracts.libraries import parse_link

# An override may hold thousands of properties (each bone of a rig); the diff needs few.
MAX_OVERRIDDEN = 64


def _link(library: Any) -> str:
    """``name@revision`` of a library the shot links; a stored shot links no other path
    (the bridge refused it before Blender read the file), so no host path is written."""
    parsed = parse_link(library.filepath)
    return f"{parsed[0]}@{parsed[1]}" if parsed else library.name


def library_of(ob: bpy.types.Object) -> str | None:
    if ob.library is not None:
        return _link(ob.library)
    override = ob.override_library
    if override is not None and override.reference is not None:
        reference = override.reference.library
        return _link(reference) if reference is not None else None
    return None


def overridden(ob: bpy.types.Object) -> list[str]:
    override = ob.override_library
    if override is None:
        return []
    return sorted({p.rna_path for p in override.properties if p.rna_path})[:MAX_OVERRIDDEN]


def linked_libraries() -> dict[str, int]:
    found = (parse_link(library.filepath) for library in bpy.data.libraries)
    return dict(sorted(link for link in found if link is not None))
