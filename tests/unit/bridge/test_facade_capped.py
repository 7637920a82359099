"""The safe-mode facades that carry the geometry caps share one base, ``Capped``: the caps
given to ``Bpy`` must still reach every ``Modifier``, and no facade may gain a ``__dict__``
(a step could then hang its own attributes on it) or a name it did not have before."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.bridge.sandbox import facade, facade_base, facade_modifiers

CAPPED = (
    facade.Bpy,
    facade.Data,
    facade.Objects,
    facade.Object,
    facade_modifiers.Modifiers,
    facade_modifiers.Modifier,
)


class _Named(list[Any]):
    """What a bpy collection offers the facade: iteration, len and get by name."""

    def get(self, name: str) -> Any:
        return next((item for item in self if item.name == name), None)


def _bpy(caps: dict[str, int]) -> tuple[facade.Bpy, SimpleNamespace]:
    count = SimpleNamespace(type="INT", is_readonly=False, is_array=False)
    array = SimpleNamespace(
        name="Array", type="ARRAY", count=2, bl_rna=SimpleNamespace(properties={"count": count})
    )
    cube = SimpleNamespace(name="Cube", type="MESH", modifiers=_Named([array]))
    real = SimpleNamespace(data=SimpleNamespace(objects=_Named([cube]), materials=_Named([])))
    return facade.Bpy(real, facade.Written(), caps), array


def test_capped_when_bpy_given_caps_a_modifier_reached_through_it_refuses_more() -> None:
    bpy, array = _bpy({"count": 10})
    modifier = bpy.data.objects["Cube"].modifiers["Array"]
    with pytest.raises(facade.FacadeError, match="at most 10"):
        modifier.set("count", 11)
    assert array.count == 2
    modifier.set("count", 10)
    assert array.count == 10


def test_capped_when_iterated_the_collection_hands_the_caps_on() -> None:
    bpy, array = _bpy({"count": 3})
    (modifier,) = list(next(iter(bpy.data.objects)).modifiers)
    with pytest.raises(facade.FacadeError, match="at most 3"):
        modifier.set("count", 4)
    assert array.count == 2


@pytest.mark.parametrize("cls", CAPPED, ids=lambda c: c.__name__)
def test_capped_when_a_step_adds_an_attribute_it_has_no_room_for_it(cls: type) -> None:
    bpy, _ = _bpy({})
    made = {
        facade.Bpy: bpy,
        facade.Data: bpy.data,
        facade.Objects: bpy.data.objects,
        facade.Object: bpy.data.objects["Cube"],
        facade_modifiers.Modifiers: bpy.data.objects["Cube"].modifiers,
        facade_modifiers.Modifier: bpy.data.objects["Cube"].modifiers["Array"],
    }[cls]
    assert type(made) is cls and isinstance(made, facade_base.Capped)
    assert not hasattr(made, "__dict__")
    with pytest.raises(facade.FacadeError, match="cannot be set in safe mode"):
        made.payload = 1
    with pytest.raises(AttributeError, match="'payload'"):
        object.__setattr__(made, "payload", 1)


def test_capped_when_mixed_into_a_collection_keeps_the_collection_names() -> None:
    for cls in (facade.Objects, facade_modifiers.Modifiers):
        assert cls.PUBLIC == facade_base.Collection.PUBLIC == frozenset({"get", "keys"})
    assert facade_base.Capped.__dict__.keys().isdisjoint({"PUBLIC", "WRITABLE", "DESCRIBED"})
