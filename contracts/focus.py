"""What the person had selected in the open Blender session when asking."""

from __future__ import annotations

from typing import Annotated

import msgspec

MAX_FOCUS = 500  # selected objects a request may carry (the planner's MAX_TARGETS)
FocusName = Annotated[str, msgspec.Meta(min_length=1, max_length=63)]  # Blender's name limit


class Focus(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the person had selected in the open Blender session when asking: the planner
    reads "it" and "this" as ``active``, "the selected ones" and "the selection" as
    ``selected``."""

    selected: Annotated[tuple[FocusName, ...], msgspec.Meta(max_length=MAX_FOCUS)] = ()
    active: FocusName | None = None
