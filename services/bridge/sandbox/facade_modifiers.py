"""The modifier and material parts of the safe-mode bpy facade (see ``facade``).

Runs inside the sandbox; imports only the standard library and its sibling.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .facade_base import (
    VALUE_TYPES,
    Capped,
    Collection,
    Facade,
    FacadeError,
    missing,
    number,
    numbers,
)


class Modifier(Capped):
    """One modifier: name, type, show_viewport, get/set of its simple properties, and a
    NODES modifier's group inputs by name (``inputs``)."""

    __slots__ = ()
    PUBLIC = frozenset({"name", "type", "show_viewport", "get", "set", "inputs"})
    WRITABLE = frozenset({"show_viewport"})
    DESCRIBED = "a modifier"

    def __getattr__(self, name: str) -> Any:
        if name in ("name", "type"):
            return str(getattr(self._real, name))
        if name == "show_viewport":
            return bool(self._real.show_viewport)
        if name == "inputs":
            return GroupInputs(self._real, self._written)
        raise missing(self.DESCRIBED, name, self.PUBLIC)

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "show_viewport":
            super().__setattr__(name, value)
        if not isinstance(value, bool):
            raise FacadeError("show_viewport must be True or False")
        self._real.show_viewport = value
        self._changed()

    def _rna(self, prop: Any) -> Any:
        """The property's RNA definition; None when the modifier has no such property."""
        if not isinstance(prop, str) or prop.startswith("_") or prop == "rna_type":
            return None
        return self._real.bl_rna.properties.get(prop)

    def _simple(self, prop: Any) -> Any:
        rna = self._rna(prop)
        if rna is None:
            raise FacadeError(f"modifier {self._real.name!r} has no property {prop!r}")
        # Only numbers and switches have ``is_array``; text and choices are never arrays.
        if rna.type not in ("BOOLEAN", "INT", "FLOAT", "STRING", "ENUM") or getattr(
            rna, "is_array", False
        ):
            raise FacadeError(
                f"{prop!r} of modifier {self._real.name!r} is not a number, text, switch or "
                "choice, so a safe step cannot read or set it; a trusted step can"
            )
        return rna

    def get(self, prop: str, default: Any = None) -> Any:
        """The value of a simple property (number, text, switch, choice), as ``dict.get``:
        ``default`` when the modifier has no such property. A choice of several (enum
        flags) reads as a sorted tuple."""
        if self._rna(prop) is None:
            return default
        self._simple(prop)
        value = getattr(self._real, prop)
        return tuple(sorted(value)) if isinstance(value, set) else value

    def set(self, prop: str, value: Any) -> None:
        """Set a simple property; the same caps as modifier.set apply (e.g. ARRAY count)."""
        rna = self._simple(prop)
        if rna.is_readonly:
            raise FacadeError(f"{prop!r} is read-only")
        if not isinstance(value, VALUE_TYPES):
            raise FacadeError(f"{prop!r} takes a number, text or switch, not {value!r}")
        cap = self._caps.get(prop)
        if cap is not None and isinstance(value, int | float) and value > cap:
            raise FacadeError(f"{prop!r} may be at most {cap} (the same cap as modifier.set)")
        try:
            setattr(self._real, prop, value)
        except (TypeError, ValueError) as err:
            raise FacadeError(f"{prop!r}: {err}") from None
        self._changed()


class GroupInputs(Facade):
    """A NODES modifier's group inputs by name: ``inputs["Size"]`` reads, ``= value`` sets,
    ``keys()`` lists them (geometry inputs left out)."""

    __slots__ = ()
    PUBLIC = frozenset({"keys"})
    DESCRIBED = "a NODES modifier's inputs"

    def _sockets(self) -> dict[str, Any]:
        group = getattr(self._real, "node_group", None)
        if self._real.type != "NODES" or group is None:
            raise FacadeError(f"modifier {self._real.name!r} is not a NODES modifier with a group")
        return {
            item.name: item
            for item in group.interface.items_tree
            if item.item_type == "SOCKET" and item.in_out == "INPUT"
            and item.socket_type != "NodeSocketGeometry"
        }  # fmt: skip

    def _key(self, name: str) -> str:
        sockets = self._sockets()
        if name not in sockets:
            raise KeyError(f"the group has no input {name!r}; it has {sorted(sockets)}")
        return str(sockets[name].identifier)

    def keys(self) -> list[str]:
        return list(self._sockets())

    def __getitem__(self, name: str) -> Any:
        value = self._real[self._key(name)]
        if isinstance(value, VALUE_TYPES):
            return value
        if hasattr(value, "__len__") and all(isinstance(v, int | float) for v in value):
            return tuple(value)
        raise FacadeError(f"input {name!r} holds a {type(value).__name__}, not a plain value")

    def __setitem__(self, name: str, new: Any) -> None:
        key = self._key(name)
        current = self._real[key]
        if isinstance(current, bool):
            if not isinstance(new, bool):
                raise FacadeError(f"input {name!r} must be True or False")
        elif isinstance(current, int | float):
            new = type(current)(number(new, f"input {name!r}"))
        elif hasattr(current, "__len__") and not isinstance(current, str):
            new = numbers(new, len(current), f"input {name!r}")
        else:
            raise FacadeError(f"input {name!r} cannot be set from a safe step")
        self._real[key] = new
        self._changed()


class Modifiers(Capped, Collection):
    __slots__ = ()
    DESCRIBED = "the object's modifiers"

    def _wrap(self, real: Any) -> Facade:
        return Modifier(real, self._written, self._caps)


class Material(Facade):
    """A material's Principled BSDF: base_color (RGBA), metallic, roughness."""

    __slots__ = ()
    PUBLIC = frozenset({"name", "base_color", "metallic", "roughness"})
    WRITABLE = frozenset({"base_color", "metallic", "roughness"})
    DESCRIBED = "a material"
    _INPUTS: ClassVar[dict[str, str]] = {
        "base_color": "Base Color", "metallic": "Metallic", "roughness": "Roughness",
    }  # fmt: skip

    def _socket(self, name: str) -> Any:
        tree = self._real.node_tree if self._real.use_nodes else None
        bsdf = None if tree is None else next(
            (n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None
        )  # fmt: skip
        if bsdf is None:
            raise FacadeError(f"material {self._real.name!r} has no Principled BSDF")
        return bsdf.inputs[self._INPUTS[name]]

    def __getattr__(self, name: str) -> Any:
        if name == "name":
            return str(self._real.name)
        if name == "base_color":
            return tuple(float(v) for v in self._socket(name).default_value)
        if name in ("metallic", "roughness"):
            return float(self._socket(name).default_value)
        raise missing(self.DESCRIBED, name, self.PUBLIC)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.WRITABLE:
            super().__setattr__(name, value)
        socket = self._socket(name)
        if name == "base_color":
            socket.default_value = numbers(value, 4, "base_color")
        else:
            socket.default_value = min(1.0, max(0.0, number(value, name)))
        self._changed()


class Materials(Collection):
    __slots__ = ()
    DESCRIBED = "bpy.data.materials"

    def _wrap(self, real: Any) -> Facade:
        return Material(real, self._written)
