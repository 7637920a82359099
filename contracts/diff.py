"""The change list of a revision, computed from its and its parent's inspection artifacts.

Pure: two ``Inspection``s in, one ``ChangeList`` out, the same on every machine (the
artifacts are rounded, and every list here is sorted). Datablocks are matched by name, so a
rename reads as one removed and one added. A material or node group no user holds is
left out on both sides, as Blender leaves it out of the saved file. A mesh's vertices are
compared by count, as the artifact records them; moving vertices without adding any shows
on the object's ``dimensions`` when it moves its bounds.

Libraries: each side's artifact names the library revisions it links, and an entry of
kind ``library`` says which one a shot moved to; an object linked from a library, or
overriding one, says which revision, and which of its properties the shot overrides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import msgspec

from contracts.changes import (
    KINDS,
    MAX_CHANGES,
    MAX_NAME_CHARS,
    MAX_PROPERTIES,
    MAX_VALUE_CHARS,
    Action,
    Change,
    ChangeList,
    Kind,
    PropertyChange,
)
from contracts.inspection import (
    InspectedData,
    InspectedMaterial,
    InspectedModifier,
    InspectedNodeGroup,
    InspectedObject,
    Inspection,
)

T = TypeVar("T")
U = TypeVar("U", InspectedMaterial, InspectedNodeGroup)
Props = dict[str, Any]
_encoder = msgspec.json.Encoder(order="sorted")


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


def object_props(obj: InspectedObject) -> Props:
    return {
        "type": obj.type,
        "parent": obj.parent,
        "location": obj.location,
        "rotation_euler": obj.rotation_euler,
        "scale": obj.scale,
        "dimensions": obj.dimensions,
        "data": obj.data,
        "materials": obj.materials,
        "modifiers": [m.name for m in obj.modifiers],  # the stack's order
        "hide_viewport": obj.hide_viewport,
        "hide_render": obj.hide_render,
        "evaluated_vertices": obj.evaluated_vertices,
        "evaluated_faces": obj.evaluated_faces,
        "camera": _plain(obj.camera),
        "light": _plain(obj.light),
        "library": obj.library,
        "overridden": obj.overridden,
    }


def modifier_props(mod: InspectedModifier) -> Props:
    return {
        **mod.properties,
        "type": mod.type,
        "show_viewport": mod.show_viewport,
        "node_group": mod.node_group,
        "error": mod.error,
    }


def data_props(data: InspectedData) -> Props:
    return {"type": data.type, "vertices": data.vertices, "edges": data.edges, "faces": data.faces}


def material_props(mat: InspectedMaterial) -> Props:
    return {
        "use_nodes": mat.use_nodes,
        "base_color": mat.base_color,
        "metallic": mat.metallic,
        "roughness": mat.roughness,
    }


def node_group_props(group: InspectedNodeGroup) -> Props:
    """A group as flat properties: its type, interface, each node's type and mute, each
    unlinked input's default, each link; so one changed default is one property."""
    props: Props = {
        "type": group.bl_idname,
        "interface": [f"{s.in_out} {s.name}: {s.socket_type}" for s in group.interface],
    }
    for node in group.nodes:
        props[f"node {node.name}"] = node.bl_idname
        if node.muted:
            props[f"node {node.name} muted"] = True
        for socket in node.inputs:
            if not socket.is_linked and socket.default is not None:
                props[f"node {node.name} input {socket.identifier}"] = socket.default
    for link in group.links:
        name = f"link {link.from_node}.{link.from_socket} -> {link.to_node}.{link.to_socket}"
        props[name] = "valid" if link.valid else "invalid"
    return props


def _bounded(value: Any) -> tuple[Any, bool]:
    text = _encoder.encode(value).decode()
    if len(text) <= MAX_VALUE_CHARS:
        return value, False
    return text[:MAX_VALUE_CHARS], True


def _empty(value: Any) -> bool:
    return value is None or value == [] or value is False


def _differences(before: Props | None, after: Props | None) -> list[PropertyChange]:
    """Properties that differ; for a datablock on one side only, those it has a value
    for (an added object's location, not its absent light)."""
    old, new = before or {}, after or {}
    out = []
    for name in sorted(old.keys() | new.keys()):
        was, now = old.get(name), new.get(name)
        if was == now or (before is None and _empty(now)) or (after is None and _empty(was)):
            continue
        (was, cut_was), (now, cut_now) = _bounded(was), _bounded(now)
        out.append(
            PropertyChange(
                name=name[:MAX_NAME_CHARS], before=was, after=now, cut=cut_was or cut_now
            )
        )
    return out


def _entries(
    kind: Kind, before: Mapping[str, Props], after: Mapping[str, Props]
) -> Iterable[Change]:
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        action: Action = "added" if was is None else "removed" if now is None else "changed"
        found = _differences(was, now)
        yield Change(
            kind=kind,
            name=name[:MAX_NAME_CHARS],
            action=action,
            properties=found[:MAX_PROPERTIES],
            more_properties=max(0, len(found) - MAX_PROPERTIES),
        )


def _by_name(items: Iterable[T], name: Callable[[T], str], props: Callable[[T], Props]) -> dict:
    return {name(item): props(item) for item in items}


def _used(items: Iterable[U]) -> list[U]:
    # A material or node group nobody uses is not saved with the file: to the revision it
    # is gone, although the description made before the save still counts it.
    return [item for item in items if item.users > 0]


def _modifiers(inspection: Inspection | None) -> dict[str, Props]:
    if inspection is None:
        return {}
    return {
        f"{obj.name}/{mod.name}": modifier_props(mod)
        for obj in inspection.objects
        for mod in obj.modifiers
    }


def _sides(inspection: Inspection | None) -> dict[Kind, dict[str, Props]]:
    if inspection is None:
        return {kind: {} for kind in KINDS}
    return {
        "object": _by_name(inspection.objects, lambda o: o.name, object_props),
        "data": _by_name(inspection.data, lambda d: d.name, data_props),
        "material": _by_name(_used(inspection.materials), lambda m: m.name, material_props),
        "modifier": _modifiers(inspection),
        "node_group": _by_name(_used(inspection.node_groups), lambda g: g.name, node_group_props),
        "library": {name: {"revision": rev} for name, rev in inspection.libraries.items()},
    }


def diff(before: Inspection | None, after: Inspection) -> ChangeList:
    """What ``after`` changed against ``before`` (None: an empty scene), bounded as
    ``contracts.changes`` says."""
    old, new = _sides(before), _sides(after)
    listed: list[Change] = []
    counts: dict[str, dict[str, int]] = {}
    total = 0
    for kind in KINDS:
        for change in _entries(kind, old[kind], new[kind]):
            total += 1
            per_kind = counts.setdefault(kind, {})
            per_kind[change.action] = per_kind.get(change.action, 0) + 1
            if len(listed) < MAX_CHANGES:
                listed.append(change)
    return ChangeList(
        scene_id=after.scene_id,
        revision=after.revision,
        base=before.revision if before is not None else None,
        changes=listed,
        more_changes=total - len(listed),
        counts=counts,
    )
