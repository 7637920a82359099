"""Modelling tools on named mesh objects, without edit mode or a UI context."""

from . import combine, edits, placement, surface

__all__ = ["combine", "edits", "placement", "surface"]
