"""Tool implementations; importing this package registers every tool."""

from . import geonodes, materials, modifiers, objects, scene

__all__ = ["geonodes", "materials", "modifiers", "objects", "scene"]
