"""Tool implementations; importing this package registers every tool."""

from . import (
    apply,
    cameras,
    collections,
    display,
    geonodes,
    inspect_object,
    keyframes,
    lights,
    materials,
    modifiers,
    objects,
    python,
    relations,
    scene,
)

__all__ = [
    "apply",
    "cameras",
    "collections",
    "display",
    "geonodes",
    "inspect_object",
    "keyframes",
    "lights",
    "materials",
    "modifiers",
    "objects",
    "python",
    "relations",
    "scene",
]
