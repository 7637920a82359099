"""The tool catalog found on demand: a small core set shown by default, the rest by
category or by search (ADR 0066).

A host's context, or a model's prompt, that carried every tool's schema would pay for a
hundred of them on every request. The core set is what most requests start with; the
other tools are found by their category (``list_category``) or by words of their name
and description (``search_tools``). A tool's category is its name's prefix ("mesh" of
``mesh.bevel``): a tool registered under a new prefix is found at once, under "other"
until the prefix is given a category here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from contracts.tools import ToolCatalog, ToolSpec

# name prefix -> category
PREFIXES: dict[str, str] = {
    "object": "objects",
    "collection": "objects",
    "scene": "objects",
    "library": "objects",  # a shot's linked library revisions (docs/studio.md)
    "modifier": "modifiers",
    "mesh": "modelling",
    "uv": "uv",
    "material": "shading",
    "shader": "shading",
    "light": "staging",
    "camera": "staging",
    "world": "staging",
    "keyframe": "animation",
    "gn": "geonodes",
    "python": "python",
    "text": "text",
    "curve": "text",
    "constraint": "rigging",
    "empty": "rigging",
    "armature": "rigging",
    "render": "render",
}
OTHER = "other"
# category -> what it holds, for a host choosing where to look
ABOUT: dict[str, str] = {
    "objects": "create, move, name, parent, show and inspect objects; collections; snapshots; "
    "a shot's linked library revisions",
    "modifiers": "the modifier stack: add, set, remove, apply",
    "modelling": "mesh edits on named objects: extrude, inset, bevel, boolean, mirror, "
    "solidify, merge, normals, shading, join, separate, origin, apply transforms",
    "uv": "UV unwrapping and projections, UV island scale",
    "shading": "materials, shader node graphs, face assignment by slot",
    "staging": "lights, cameras and the world",
    "animation": "keyframes",
    "geonodes": "Geometry Nodes graphs (spec 004 GN_OPS)",
    "python": "Python steps, sandboxed or approved",
    "text": "text objects and curves (bezier, circle, path), curve to mesh",
    "rigging": "constraints (track-to, follow-path, copy, limits), empties, armatures",
    "render": "render settings and colour management",
    OTHER: "tools not yet given a category",
}
# Shown by default: what a first request about a scene most often needs.
CORE: tuple[str, ...] = (
    "object.create",
    "object.transform",
    "object.delete",
    "object.duplicate",
    "object.rename",
    "material.assign",
    "modifier.add",
    "light.create",
    "camera.create",
    "scene.snapshot",
)
# Words of a request that call for a category's tools in a model's prompt.
WORDS: dict[str, tuple[str, ...]] = {
    "objects": ("collection", "parent", "hide", "show", "visib", "inspect", "rename"),
    # a bevel, mirror or solidify is a modifier as often as an edit of the mesh
    "modifiers": (
        "modifier", "subdiv", "array", "decimate", "remesh", "displace", "apply", "bevel",
        "mirror", "solidify", "wireframe", "triangulate", "weld", "boolean",
    ),
    "modelling": (
        "extrude", "inset", "bevel", "chamfer", "boolean", "union", "subtract", "cut",
        "intersect", "solidify", "thick", "mirror", "merge", "weld", "normal", "smooth",
        "flat", "shade", "join", "separate", "split", "origin", "apply", "scale",
    ),
    "uv": ("uv", "unwrap", "project", "island", "texture"),
    "shading": (
        "material", "shader", "metal", "texture", "noise", "voronoi", "wave", "brick",
        "bump", "scratch", "rough", "colour", "color", "ramp", "image", "glass", "paint",
    ),
    "staging": (
        "light", "lamp", "sun", "camera", "world", "sky", "background", "hdri", "environment",
    ),
    "animation": ("keyframe", "animat", "frame"),
    "geonodes": ("geometry node", "node", "scatter", "instance"),
    "python": ("python", "script"),
    "text": ("text", "word", "letter", "font", "curve", "bezier", "circle", "path"),
    "rigging": (
        "constraint", "track", "follow", "aim", "empty", "armature", "bone", "rig", "limit",
    ),
    "render": ("render", "samples", "resolution", "engine", "cycles", "eevee", "exposure"),
}  # fmt: skip
MAX_QUERY = 200
MAX_RESULTS = 20
_WORD = re.compile(r"[a-z0-9]+")


def category_of(name: str) -> str:
    """The category of a tool by its name's prefix; "other" for a prefix not given one."""
    return PREFIXES.get(name.split(".", 1)[0], OTHER)


def estimated_tokens(value: Any) -> int:
    """A model's tokens for ``value`` as JSON, estimated as characters / 4 (rounded up):
    close to what tokenizers count for English and JSON, and the same on every machine."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return -(-len(text) // 4)


def entry(tool: ToolSpec, schemas: bool = True) -> dict[str, Any]:
    """One tool as a listing shows it; without ``schemas``, name and description alone."""
    shown: dict[str, Any] = {
        "name": tool.name,
        "category": category_of(tool.name),
        "description": tool.description,
        "safety_level": tool.safety_level,
    }
    if schemas:
        shown["input_schema"] = tool.input_schema
        if tool.output_schema is not None:
            shown["output_schema"] = tool.output_schema
    return shown


def categories(catalog: ToolCatalog) -> list[dict[str, Any]]:
    """Each category the catalog has tools in: what it holds and its tools' names."""
    named: dict[str, list[str]] = {}
    for tool in catalog.tools:
        named.setdefault(category_of(tool.name), []).append(tool.name)
    return [
        {"category": c, "about": ABOUT.get(c, ABOUT[OTHER]), "tools": sorted(named[c])}
        for c in sorted(named)
    ]


def default_listing(catalog: ToolCatalog) -> dict[str, Any]:
    """What a host sees first: the core tools with their input schemas, and the index of
    categories by name. Its size is held under a budget by a test."""
    core = [entry(t) for t in catalog.tools if t.name in CORE]
    for shown in core:
        shown.pop("output_schema", None)
    return {"catalog_version": catalog.version, "tools": core, "categories": categories(catalog)}


def category_listing(catalog: ToolCatalog, category: str) -> list[dict[str, Any]]:
    """Every tool of ``category`` with its schemas; [] for a category without tools."""
    return [entry(t) for t in catalog.tools if category_of(t.name) == category]


def search(
    catalog: ToolCatalog, query: str, category: str | None = None, limit: int = 8
) -> list[dict[str, Any]]:
    """The tools whose name, category or description hold the most words of ``query``
    (a word of the name counts twice), best first, ties by name; at most ``limit``."""
    words = set(_WORD.findall(query.lower()[:MAX_QUERY]))
    scored: list[tuple[int, str, ToolSpec]] = []
    for tool in catalog.tools:
        kind = category_of(tool.name)
        if category is not None and kind != category:
            continue
        named = set(_WORD.findall(tool.name.lower())) | {kind}
        said = set(_WORD.findall(tool.description.lower()))
        score = sum(2 * (w in named) + (w in said or _stem_in(w, said)) for w in words)
        if score:
            scored.append((-score, tool.name, tool))
    return [entry(t) for _, _, t in sorted(scored)[: min(limit, MAX_RESULTS)]]


def _stem_in(word: str, said: set[str]) -> bool:
    # "bevels", "unwrapping": a word found by its first five letters
    return len(word) >= 5 and any(s.startswith(word[:5]) for s in said)


def needed(request: str) -> set[str]:
    """The categories a request's words call for, besides the core set's."""
    text = request.lower()
    return {category for category, words in WORDS.items() if any(w in text for w in words)}
