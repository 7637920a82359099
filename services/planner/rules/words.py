"""Word tables of the rules grammar for counts, directions, sizes, lights and attributes.

docs/grammar.md documents every table here; keep the two in step.
"""

from __future__ import annotations

from services.planner.rules.vocab import srgb_hex_to_linear

NUMBER_WORDS: dict[str, int] = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
    "couple": 2,  # "a couple of cubes"
    "pair": 2,
}
TIMES_WORDS: dict[str, int] = {"once": 1, "twice": 2, "thrice": 3}

# Plural primitive words: "three cubes", "all spheres".
PLURALS: dict[tuple[str, ...], str] = {
    ("cubes",): "cube",
    ("boxes",): "cube",
    ("uv", "spheres"): "uv_sphere",
    ("spheres",): "uv_sphere",
    ("balls",): "uv_sphere",
    ("ico", "spheres"): "ico_sphere",
    ("icospheres",): "ico_sphere",
    ("cylinders",): "cylinder",
    ("cones",): "cone",
    ("planes",): "plane",
    ("toruses",): "torus",
    ("tori",): "torus",
    ("monkeys",): "monkey",
}

# Object types a group word stands for: "all lights", "every camera".
TYPE_GROUPS: dict[str, str] = {
    "lights": "LIGHT",
    "light": "LIGHT",
    "lamps": "LIGHT",
    "cameras": "CAMERA",
    "camera": "CAMERA",
    "meshes": "MESH",
    "mesh": "MESH",
}
EVERYTHING = frozenset({"everything", "all"})
OBJECT_WORDS = frozenset({"objects", "object", "things"})

AXES = ("x", "y", "z")
# Blender's view axes: +Z up, -Y toward the front view's viewer, +X to its right.
DIRECTIONS: dict[str, tuple[int, int]] = {
    "up": (2, 1),
    "upward": (2, 1),
    "upwards": (2, 1),
    "down": (2, -1),
    "downward": (2, -1),
    "downwards": (2, -1),
    "right": (0, 1),
    "left": (0, -1),
    "forward": (1, -1),
    "forwards": (1, -1),
    "back": (1, 1),
    "backward": (1, 1),
    "backwards": (1, 1),
}
# Length units and what one of each is in metres (a Blender unit): "4 cm deep" is 0.04.
LENGTH_UNITS: dict[str, float] = {
    **dict.fromkeys(("units", "unit", "meters", "meter", "metres", "metre", "m"), 1.0),
    **dict.fromkeys(("cm", "centimeters", "centimeter", "centimetres", "centimetre"), 0.01),
    **dict.fromkeys(("mm", "millimeters", "millimeter", "millimetres", "millimetre"), 0.001),
    **dict.fromkeys(("km", "kilometers", "kilometer", "kilometres", "kilometre"), 1000.0),
}
UNIT_WORDS = tuple(LENGTH_UNITS)

ROW_SPACING = 3  # between counted objects and copies: a default cube (2) and a gap (1)

# Size words of "make Box twice as big" and the factor they scale by.
SIZE_FACTORS: dict[str, float] = {"twice": 2, "double": 2, "thrice": 3, "triple": 3, "half": 0.5}
BIGGER = frozenset({"bigger", "larger", "taller", "wider"})
SMALLER = frozenset({"smaller", "shorter", "narrower"})
AS_BIG = frozenset({"big", "large", "tall", "wide", "small"})

# Material adjectives of "a rough blue cube" (values of material.assign).
SURFACE_WORDS: dict[str, tuple[str, float]] = {
    "metallic": ("metallic", 1.0),
    "metal": ("metallic", 1.0),
    "rough": ("roughness", 0.9),
    "matte": ("roughness", 1.0),
    "glossy": ("roughness", 0.1),
    "shiny": ("roughness", 0.1),
    "polished": ("roughness", 0.05),
    "dull": ("roughness", 0.8),
    "reflective": ("roughness", 0.1),
    "chrome": ("metallic", 1.0),
    "metalic": ("metallic", 1.0),
}
# Words asking for light from a surface: no material tool takes an emission yet.
EMISSION_WORDS = frozenset(
    {"glow", "glows", "glowing", "emissive", "emission", "emit", "emits", "emitting", "luminous"}
)
EMISSION = (
    "materials here take a color, metallic and roughness; nothing makes a surface glow "
    "(emission) yet. For light, add a light: add a warm point light above <N>"
)
SHADE_WORDS: dict[str, bool] = {"smooth": True, "flat": False}
DARK, LIGHT = "dark", "light"  # "dark blue" = blue x 0.2, "light blue" = halfway to white

LIGHT_KINDS: dict[str, str] = {"point": "point", "sun": "sun", "spot": "spot", "area": "area"}
LIGHT_NOUNS = ("light", "lamp")
# The name Blender gives a new light of each kind.
LIGHT_NAMES: dict[str, str] = {"point": "Point", "sun": "Sun", "spot": "Spot", "area": "Area"}
LIGHT_TINTS: dict[str, list[float]] = {
    "warm": srgb_hex_to_linear("ffc58f"),  # about 3200 K
    "cool": srgb_hex_to_linear("cadaff"),  # about 7500 K
    "cold": srgb_hex_to_linear("cadaff"),
}
POWER_WORDS = ("power", "strength", "energy", "intensity", "brightness")

WORLD_WORDS = ("background", "world", "sky", "environment")

KEYFRAME_PROPERTIES: dict[str, str] = {
    "location": "location",
    "position": "location",
    "rotation": "rotation",
    "scale": "scale",
    "size": "scale",
}

# Things an artist asks for that no blendmesh tool does, and what to say about them.
NO_TOOL: dict[str, str] = {
    "import": "blendmesh does not import files into a scene",
    "undo": "a request cannot undo a run; `blendmesh revert SCENE REVISION` makes a new "
    "revision equal to an earlier one (`blendmesh scenes history SCENE` lists them), or say "
    "what to change back (move Box to 0 0 0)",
    "redo": "there is no redo; say the change again",
    "save": "blendmesh saves the scene after every run by itself",
    "open": "blendmesh does not open files",
    "load": "blendmesh does not load files",
    "bake": "blendmesh does not bake",
    "sculpt": "blendmesh has no sculpting tools",
    "unwrap": "blendmesh has no UV tools",
    "extrude": "blendmesh does not edit meshes vertex by vertex",
    "join": "blendmesh does not join meshes",
    "merge": "blendmesh does not merge meshes",
    "separate": "blendmesh does not separate meshes",
    "play": "blendmesh does not play animations",
    "simulate": "blendmesh does not run simulations",
    "texture": "blendmesh has no texture tools; materials take a color, metallic, roughness",
    "select": "blendmesh keeps no selection; name the objects in the request (delete Box and Ball)",
    "deselect": "blendmesh keeps no selection; name the objects in the request",
}
