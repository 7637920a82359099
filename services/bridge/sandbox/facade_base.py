"""The base of the safe-mode bpy facade: what every facade shares, and vectors.

See ``facade`` for what a safe step sees; this module only holds the pieces the object and
the modifier facades both build on. Runs inside the sandbox; imports only the standard
library.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

MAX_NAME = 63  # Blender's name limit, in bytes of UTF-8
VALUE_TYPES = (bool, int, float, str)


class FacadeError(Exception):
    """A facade call with a value it cannot take; the message says what would work."""


class NotInFacade(AttributeError):
    """A name the facade does not have (``bpy.ops``, ``obj.driver_add``): safe mode refuses
    it as a policy, whichever way the step reached for it."""


def missing(what: str, name: str, public: frozenset[str]) -> NotInFacade:
    return NotInFacade(
        f"{what} has no {name!r} in safe mode (it has {', '.join(sorted(public))}); "
        "docs/python-steps.md lists the facade, or ask for a trusted step"
    )


class Written:
    """Whether the step changed the scene, so an unchanged scene is not saved again."""

    def __init__(self) -> None:
        self.wrote = False


class Facade:
    """Base of every facade: attributes outside ``PUBLIC`` are not readable from a step,
    and only ``WRITABLE`` ones can be set."""

    __slots__ = ("_real", "_written")
    _real: Any
    _written: Written
    PUBLIC: ClassVar[frozenset[str]] = frozenset()
    WRITABLE: ClassVar[frozenset[str]] = frozenset()
    DESCRIBED: ClassVar[str] = "this value"

    def __init__(self, real: Any, written: Written) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_written", written)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.WRITABLE:
            raise FacadeError(
                f"{self.DESCRIBED}.{name} cannot be set in safe mode"
                + (f"; settable: {', '.join(sorted(self.WRITABLE))}" if self.WRITABLE else "")
            )
        object.__setattr__(self, name, value)

    def _changed(self) -> None:
        self._written.wrote = True


class Capped(Facade):
    """A facade on the way from ``Bpy`` to a ``Modifier``: it carries the geometry caps
    down so that the modifier facade can check a value against them. It adds no names,
    so ``PUBLIC`` and ``DESCRIBED`` still come from the class beside it."""

    __slots__ = ("_caps",)
    _caps: dict[str, int]

    def __init__(self, real: Any, written: Written, caps: dict[str, int]) -> None:
        super().__init__(real, written)
        object.__setattr__(self, "_caps", caps)


def number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FacadeError(f"{what} must be a finite number, not {value!r}")
    return float(value)


def numbers(value: Any, size: int, what: str) -> tuple[float, ...]:
    if isinstance(value, str) or not hasattr(value, "__len__") or len(value) != size:
        raise FacadeError(f"{what} must be {size} numbers, not {value!r}")
    return tuple(number(v, what) for v in value)


def name_value(value: Any, what: str) -> str:
    """A name Blender keeps as given: it cuts one at a NUL or past 63 bytes without a word."""
    if not isinstance(value, str) or not value:
        raise FacadeError(f"{what} must be a name of 1 to {MAX_NAME} bytes, not {value!r:.80}")
    control = next((c for c in value if c < " " or "\x7f" <= c <= "\x9f"), None)
    if control is not None:
        raise FacadeError(
            f"{what} {value!r:.80} holds a control character (U+{ord(control):04X}); a name "
            "holds printable characters only (Blender cuts one at U+0000)"
        )
    if len(value.encode("utf-8")) > MAX_NAME:
        raise FacadeError(
            f"{what} {value!r:.80} is {len(value.encode('utf-8'))} bytes of UTF-8; Blender keeps "
            f"at most {MAX_NAME} and would cut the rest"
        )
    return value


class Vector(Facade):
    """An object's location, rotation_euler or scale: x, y, z (and [0..2]) read and set."""

    __slots__ = ("_prop",)
    _prop: str
    PUBLIC = frozenset({"x", "y", "z"})
    WRITABLE = PUBLIC
    DESCRIBED = "a vector"

    def __init__(self, real: Any, written: Written, prop: str) -> None:
        super().__init__(real, written)
        object.__setattr__(self, "_prop", prop)

    def _values(self) -> tuple[float, ...]:
        return tuple(float(v) for v in getattr(self._real, self._prop))

    def __getattr__(self, name: str) -> float:
        if name in ("x", "y", "z"):
            return self._values()["xyz".index(name)]
        raise missing(self.DESCRIBED, name, self.PUBLIC)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in ("x", "y", "z"):
            super().__setattr__(name, value)
        self[("x", "y", "z").index(name)] = value

    def __getitem__(self, index: int) -> float:
        return self._values()[index]

    def __setitem__(self, index: int, value: Any) -> None:
        values = list(self._values())
        values[index] = number(value, f"{self._prop}[{index}]")
        setattr(self._real, self._prop, values)
        self._changed()

    def __len__(self) -> int:
        return 3

    def __iter__(self) -> Iterator[float]:
        return iter(self._values())

    def __repr__(self) -> str:
        return f"({', '.join(f'{v:g}' for v in self._values())})"


class Collection(Facade):
    """A name-keyed collection: ``get(name)``, ``[name]``, ``in``, ``len``, iteration,
    ``keys()``. Items are facades made by ``_wrap``."""

    __slots__ = ()
    PUBLIC = frozenset({"get", "keys"})
    DESCRIBED = "a collection"

    def _wrap(self, real: Any) -> Facade:
        raise NotImplementedError

    def get(self, name: str, default: Any = None) -> Any:
        real = self._real.get(name) if isinstance(name, str) else None
        return default if real is None else self._wrap(real)

    def keys(self) -> list[str]:
        return [item.name for item in self._real]

    def __getitem__(self, name: str) -> Facade:
        found = self.get(name)
        if found is None:
            raise KeyError(f"{name!r} is not in {self.DESCRIBED}")
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._real.get(name) is not None

    def __iter__(self) -> Iterator[Facade]:
        return iter([self._wrap(item) for item in self._real])

    def __len__(self) -> int:
        return len(self._real)
