"""Tool implementations; importing this package registers every tool."""

from . import materials, modifiers, objects, scene

__all__ = ["materials", "modifiers", "objects", "scene"]
