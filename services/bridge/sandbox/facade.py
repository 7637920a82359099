"""The bpy a safe step sees: a small, documented stand-in that never hands out real bpy.

``import bpy`` in a safe step binds ``Bpy`` below (ADR 0009). It reads and changes
objects, transforms, visibility, modifiers, a NODES modifier's group inputs and the
Principled BSDF of materials; every value it returns is a str, number, bool, tuple or
another facade, and every facade's real Blender object sits in a ``_`` attribute that
safe code cannot name. docs/python-steps.md lists every name; ``PUBLIC`` below is that
list, and the guards in ``restricted`` allow nothing else.

Runs inside the sandbox, handed the real bpy module by child.py; imports only the
standard library itself.
"""

from __future__ import annotations

from typing import Any

from .facade_base import (
    Capped,
    Collection,
    Facade,
    FacadeError,
    NotInFacade,
    Vector,
    Written,
    missing,
    name_value,
    numbers,
)
from .facade_modifiers import Material, Materials, Modifiers

__all__ = ["Bpy", "Facade", "FacadeError", "NotInFacade", "Written", "missing"]


class Object(Capped):
    """One object: name, type, transforms, visibility, modifiers, active_material."""

    __slots__ = ()
    PUBLIC = frozenset({
        "name", "type", "location", "rotation_euler", "scale", "hide_viewport", "hide_render",
        "modifiers", "active_material",
    })  # fmt: skip
    WRITABLE = frozenset({
        "name", "location", "rotation_euler", "scale", "hide_viewport", "hide_render",
    })  # fmt: skip
    DESCRIBED = "an object"
    _VECTORS = ("location", "rotation_euler", "scale")

    def __getattr__(self, name: str) -> Any:
        if name in ("name", "type"):
            return str(getattr(self._real, name))
        if name in self._VECTORS:
            return Vector(self._real, self._written, name)
        if name in ("hide_viewport", "hide_render"):
            return bool(getattr(self._real, name))
        if name == "modifiers":
            return Modifiers(self._real.modifiers, self._written, self._caps)
        if name == "active_material":
            material = self._real.active_material
            return None if material is None else Material(material, self._written)
        raise missing(self.DESCRIBED, name, self.PUBLIC)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.WRITABLE:
            super().__setattr__(name, value)
        if name == "name":
            self._real.name = name_value(value, "name")
        elif name in self._VECTORS:
            setattr(self._real, name, numbers(value, 3, name))
        else:
            if not isinstance(value, bool):
                raise FacadeError(f"{name} must be True or False")
            setattr(self._real, name, value)
        self._changed()


class Objects(Capped, Collection):
    __slots__ = ()
    DESCRIBED = "bpy.data.objects"

    def _wrap(self, real: Any) -> Facade:
        return Object(real, self._written, self._caps)


class Data(Capped):
    """``bpy.data``: objects and materials."""

    __slots__ = ()
    PUBLIC = frozenset({"objects", "materials"})
    DESCRIBED = "bpy.data"

    def __getattr__(self, name: str) -> Any:
        if name == "objects":
            return Objects(self._real.objects, self._written, self._caps)
        if name == "materials":
            return Materials(self._real.materials, self._written)
        raise missing(self.DESCRIBED, name, self.PUBLIC)


class Scene(Facade):
    """``bpy.context.scene``: its name and frame_current, read only."""

    __slots__ = ()
    PUBLIC = frozenset({"name", "frame_current"})
    DESCRIBED = "the scene"

    def __getattr__(self, name: str) -> Any:
        if name == "name":
            return str(self._real.name)
        if name == "frame_current":
            return int(self._real.frame_current)
        raise missing(self.DESCRIBED, name, self.PUBLIC)


class Context(Facade):
    """``bpy.context``: only ``scene``."""

    __slots__ = ()
    PUBLIC = frozenset({"scene"})
    DESCRIBED = "bpy.context"

    def __getattr__(self, name: str) -> Any:
        if name == "scene":
            return Scene(self._real.scene, self._written)
        raise missing(self.DESCRIBED, name, self.PUBLIC)


class Bpy(Capped):
    """The module ``import bpy`` gives a safe step: ``data`` and ``context``."""

    __slots__ = ()
    PUBLIC = frozenset({"data", "context"})
    DESCRIBED = "bpy"

    def __getattr__(self, name: str) -> Any:
        if name == "data":
            return Data(self._real.data, self._written, self._caps)
        if name == "context":
            return Context(self._real.context, self._written)
        raise missing(self.DESCRIBED, name, self.PUBLIC)
