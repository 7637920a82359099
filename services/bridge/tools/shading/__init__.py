"""Shading tools: material node graphs, colour ramps and materials on faces."""

from . import graph, ramps

__all__ = ["graph", "ramps"]
