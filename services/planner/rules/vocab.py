"""Word tables of the rules planner grammar: primitives, modifiers and colors.

Multi-word entries are tuples of lower-case words, matched longest first.
docs/grammar.md documents every table here; keep the two in step.
"""

from __future__ import annotations

PRIMITIVES: dict[tuple[str, ...], str] = {
    ("cube",): "cube",
    ("uv", "sphere"): "uv_sphere",
    ("uv_sphere",): "uv_sphere",
    ("uv-sphere",): "uv_sphere",
    ("uvsphere",): "uv_sphere",
    ("sphere",): "uv_sphere",
    ("ico", "sphere"): "ico_sphere",
    ("icosphere",): "ico_sphere",
    ("ico_sphere",): "ico_sphere",
    ("ico-sphere",): "ico_sphere",
    ("cylinder",): "cylinder",
    ("cone",): "cone",
    ("plane",): "plane",
    ("torus",): "torus",
    ("monkey",): "monkey",
    ("suzanne",): "monkey",
}

MODIFIERS: dict[tuple[str, ...], str] = {
    ("bevel",): "BEVEL",
    ("subdivision", "surface"): "SUBSURF",
    ("subdivision_surface",): "SUBSURF",
    ("subdivision",): "SUBSURF",
    ("subsurf",): "SUBSURF",
    ("array",): "ARRAY",
    ("mirror",): "MIRROR",
    ("solidify",): "SOLIDIFY",
    ("wireframe",): "WIREFRAME",
    ("decimate",): "DECIMATE",
    ("displace",): "DISPLACE",
    ("smooth",): "SMOOTH",
    ("triangulate",): "TRIANGULATE",
    ("weld",): "WELD",
    ("screw",): "SCREW",
    ("remesh",): "REMESH",
    ("cast",): "CAST",
    ("simple", "deform"): "SIMPLE_DEFORM",
    ("simple_deform",): "SIMPLE_DEFORM",
    ("wave",): "WAVE",
    ("edge", "split"): "EDGE_SPLIT",
    ("edge_split",): "EDGE_SPLIT",
    ("weighted", "normal"): "WEIGHTED_NORMAL",
    ("weighted_normal",): "WEIGHTED_NORMAL",
    ("geometry", "nodes"): "NODES",
    ("geometry_nodes",): "NODES",
    ("geonodes",): "NODES",
}

# The name Blender (and the bridge) gives a new modifier of each type.
MODIFIER_DEFAULT_NAMES: dict[str, str] = {
    "BEVEL": "Bevel",
    "SUBSURF": "Subdivision",
    "ARRAY": "Array",
    "MIRROR": "Mirror",
    "SOLIDIFY": "Solidify",
    "WIREFRAME": "Wireframe",
    "DECIMATE": "Decimate",
    "DISPLACE": "Displace",
    "SMOOTH": "Smooth",
    "TRIANGULATE": "Triangulate",
    "WELD": "Weld",
    "SCREW": "Screw",
    "REMESH": "Remesh",
    "CAST": "Cast",
    "SIMPLE_DEFORM": "SimpleDeform",
    "WAVE": "Wave",
    "EDGE_SPLIT": "EdgeSplit",
    "WEIGHTED_NORMAL": "WeightedNormal",
    "NODES": "GeometryNodes",
}

# Linear RGB (what Blender's base color stores). Mixed colors are the sRGB values in the
# comment converted with the sRGB transfer function and rounded to 4 decimals.
COLORS: dict[str, list[float]] = {
    "red": [1.0, 0.0, 0.0],
    "green": [0.0, 1.0, 0.0],
    "blue": [0.0, 0.0, 1.0],
    "yellow": [1.0, 1.0, 0.0],
    "orange": [1.0, 0.2159, 0.0],  # sRGB #FF8000
    "purple": [0.2159, 0.0, 0.2159],  # sRGB #800080
    "pink": [1.0, 0.5271, 0.5972],  # sRGB #FFC0CB
    "white": [1.0, 1.0, 1.0],
    "black": [0.0, 0.0, 0.0],
    "gray": [0.2159, 0.2159, 0.2159],  # sRGB #808080
    "grey": [0.2159, 0.2159, 0.2159],
    "cyan": [0.0, 1.0, 1.0],
    "magenta": [1.0, 0.0, 1.0],
    "brown": [0.2582, 0.0595, 0.0065],  # sRGB #8B4513
    "beige": [0.9131, 0.9131, 0.7157],  # sRGB #F5F5DC
    "gold": [1.0, 0.6795, 0.0],  # sRGB #FFD700
    "silver": [0.5271, 0.5271, 0.5271],  # sRGB #C0C0C0
    "navy": [0.0, 0.0, 0.2159],  # sRGB #000080
    "teal": [0.0, 0.2159, 0.2159],  # sRGB #008080
}

ARTICLES = frozenset({"a", "an", "the"})

# Words that never start a name: "the" right before one of them is taken as a name
# itself ("move the to 0 0 0" moves an object called "the"; better quote it).
CONNECTORS = frozenset(
    {"to", "by", "of", "on", "from", "with", "named", "called", "at", "as"}
    | {"rotated", "scaled", "modifier", "material", "and", "then"}
)

MATERIAL_WORDS: dict[str, str] = {
    "color": "base_color",
    "colour": "base_color",
    "metallic": "metallic",
    "metalness": "metallic",
    "roughness": "roughness",
}


def srgb_hex_to_linear(digits: str) -> list[float]:
    """``"ff8000"`` -> linear RGB, each channel rounded to 4 decimals."""
    channels = []
    for i in (0, 2, 4):
        c = int(digits[i : i + 2], 16) / 255
        linear = c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        channels.append(round(linear, 4))
    return channels
