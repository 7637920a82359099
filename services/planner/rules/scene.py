"""What the rules grammar knows of the scene while it reads a request (pure, no I/O).

The planner is given the scene's summary (``contracts.scenes``) when there is one; the
``Stage`` starts from it and follows the plan clause by clause (objects created, renamed,
moved, deleted), so "all cubes", "the camera", "above Box" and free names such as
``Cube.001`` mean the scene as it will be when the clause runs. Without a summary the
stage is unknown: group words and checks of names are refused or skipped.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from contracts.scenes import SceneSummary

MAX_SUFFIX = 999  # Blender numbers copies .001 to .999


# The Blender type of what each of the text, curve and rig tools makes.
MADE_TYPES = {
    "text.create": "FONT",
    "curve.create": "CURVE",
    "empty.create": "EMPTY",
    "armature.create": "ARMATURE",
}


@dataclass
class Thing:
    """One object of the stage: its Blender type, primitive if the plan made it, where it is."""

    type: str
    primitive: str | None = None
    location: list[float] | None = None
    modifiers: list[tuple[str, str]] = field(default_factory=list)  # (name, TYPE)
    scale: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])
    # Half its world size along x, y, z when it had scale ``half_scale`` (measured by the
    # summary, or made by this plan); None when only its primitive can tell.
    half: list[float] | None = None
    half_scale: list[float] = field(default_factory=lambda: [1.0, 1.0, 1.0])
    # From its location to the middle of its world bounds: its parent's offset and where
    # its mesh sits around its origin (an imported mesh's origin may be at its base).
    centre: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


def base_name(name: str) -> str:
    """``Cube.001`` and ``Cube1`` -> ``cube``: the name a count or copy was numbered from."""
    return re.sub(r"(\.\d{3}|\d+)$", "", name).lower()


class Stage:
    """The scene's objects as the request has them so far, and the clause context."""

    def __init__(self, summary: SceneSummary | None) -> None:
        self.known = summary is not None
        self.things: dict[str, Thing] = {}
        for o in summary.objects if summary is not None else []:
            mods = [tuple(m.split(":", 1)) for m in o.modifiers if ":" in m]
            thing = Thing(o.type, None, list(o.location), [(n, t) for n, t in mods], list(o.scale))
            if o.world_bounds is not None and o.type == "MESH":
                low, high = o.world_bounds
                thing.half = [(b - a) / 2 for a, b in zip(low, high, strict=True)]
                thing.half_scale = list(o.scale)
                thing.centre = [
                    (a + b) / 2 - at for a, b, at in zip(low, high, o.location, strict=True)
                ]
            self.things[o.name] = thing
        self.frame: int | None = None  # set by "at frame 24 ..."
        self.changed: dict[str, list[str]] = {}  # object -> properties its last move set
        self.last_copy: str | None = None  # "the copy": the newest object.duplicate made
        self.selected: list[str] | None = None  # "the selected ones": from the session, if sent
        self.them: list[str] = []  # "them": what the clause or run before made, else touched

    # -- questions --------------------------------------------------------------------
    def exists(self, name: str) -> bool:
        return name in self.things

    def location(self, name: str) -> list[float] | None:
        thing = self.things.get(name)
        return None if thing is None or thing.location is None else list(thing.location)

    def middle(self, name: str) -> list[float] | None:
        """The middle of the object's bounds in the world (its location when unmeasured)."""
        thing = self.things.get(name)
        if thing is None or thing.location is None:
            return None
        return [a + b for a, b in zip(thing.location, thing.centre, strict=True)]

    def spelled(self, name: str) -> str:
        """An unquoted name as the scene spells it: "the box" is Box when no object is
        called "box" and exactly one is called so in another case."""
        if name in self.things:
            return name
        same = [n for n in self.things if n.lower() == name.lower()]
        return same[0] if len(same) == 1 else name

    def suggest(self, name: str) -> str | None:
        """The object name closest to ``name`` (case-insensitive), if any is close."""
        by_lower = {n.lower(): n for n in self.things}
        close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
        return by_lower[close[0]] if close else None

    def of_type(self, kind: str) -> list[str]:
        return sorted(n for n, t in self.things.items() if t.type == kind)

    def like(self, primitive: str, default_name: str) -> list[str]:
        """Mesh objects of a primitive: made as one by this plan, or named like Blender
        names one (``Cube``, ``Cube.001``, ``Cube2``)."""
        base = default_name.lower()
        return sorted(
            n
            for n, t in self.things.items()
            if t.type == "MESH"
            and (t.primitive == primitive or (t.primitive is None and base_name(n) == base))
        )

    def named_like(self, stem: str) -> list[str]:
        """Objects numbered from a common noun: ``post`` is Post, Post.001, post2."""
        return sorted(n for n in self.things if base_name(n) == stem)

    def everything(self) -> list[str]:
        return sorted(self.things)

    def modifier(self, obj: str, mtype: str) -> str | None:
        """The name of ``obj``'s modifier of type ``mtype`` when it has exactly one."""
        thing = self.things.get(obj)
        found = [n for n, t in thing.modifiers if t == mtype] if thing else []
        return found[0] if len(found) == 1 else None

    def free_names(self, base: str, count: int, taken: set[str] | None = None) -> list[str]:
        """``count`` names Blender-style (``Cube``, ``Cube.001``, ...) that no object has."""
        used = set(self.things) | (taken or set())
        names: list[str] = []
        candidates = [base] + [f"{base[:59]}.{i:03d}" for i in range(1, MAX_SUFFIX + 1)]
        for candidate in candidates:
            if candidate not in used:
                names.append(candidate)
                if len(names) == count:
                    return names
        raise ValueError(f"no free name left for {base!r}")

    # -- changes, applied after each operation ----------------------------------------
    def apply(self, tool: str, args: dict[str, Any]) -> None:
        """Follow one planned operation."""
        if tool == "object.create":
            name = args.get("name")
            if name is not None:
                location = [float(v) for v in args.get("location", [0, 0, 0])]
                scale = [float(v) for v in args.get("scale", [1, 1, 1])]
                thing = Thing("MESH", args["primitive"], location, [], scale)
                if "dimensions" in args:
                    thing.half = [
                        float(d) / 2 * s for d, s in zip(args["dimensions"], scale, strict=True)
                    ]
                    thing.half_scale = list(scale)
                self.things[name] = thing
        elif tool in ("camera.create", "light.create") and "name" in args:
            kind = "CAMERA" if tool == "camera.create" else "LIGHT"
            location = [float(v) for v in args.get("location", [0, 0, 0])]
            self.things[args["name"]] = Thing(kind, None, location)
        elif tool in MADE_TYPES and "name" in args:
            location = [float(v) for v in args.get("location", [0, 0, 0])]
            self.things[args["name"]] = Thing(MADE_TYPES[tool], None, location)
        elif tool == "curve.to_mesh" and args["name"] in self.things:
            self.things[args["name"]].type = "MESH"
        elif tool == "object.duplicate":
            self._duplicate(args)
        elif tool == "object.rename" and args["name"] in self.things:
            self.things[args["new_name"]] = self.things.pop(args["name"])
        elif tool == "object.delete":
            self.things.pop(args["name"], None)
        elif tool == "object.transform":
            self._transform(args)
        elif tool == "modifier.add" and args["object"] in self.things:
            name = args.get("name", args["type"].title())
            self.things[args["object"]].modifiers.append((name, args["type"]))

    def _duplicate(self, args: dict[str, Any]) -> None:
        source = self.things.get(args["name"])
        if "new_name" in args:
            self.last_copy = args["new_name"]
        if source is None or "new_name" not in args:
            return
        location = None
        if source.location is not None:
            offset = args.get("offset", [0, 0, 0])
            location = [a + b for a, b in zip(source.location, offset, strict=True)]
        self.things[args["new_name"]] = Thing(
            source.type,
            source.primitive,
            location,
            list(source.modifiers),
            list(source.scale),
            None if source.half is None else list(source.half),
            list(source.half_scale),
            list(source.centre),
        )

    def _transform(self, args: dict[str, Any]) -> None:
        name = args["name"]
        self.changed[name] = [k for k in ("location", "rotation", "scale") if k in args]
        thing = self.things.get(name)
        if thing is not None and "scale" in args:
            given = [float(v) for v in args["scale"]]
            relative = args.get("mode") == "relative"
            thing.scale = (
                [a * b for a, b in zip(thing.scale, given, strict=True)] if relative else given
            )
        if thing is None or "location" not in args:
            return
        if args.get("mode") != "relative":
            thing.location = [float(v) for v in args["location"]]
        elif thing.location is not None:
            thing.location = [a + b for a, b in zip(thing.location, args["location"], strict=True)]
