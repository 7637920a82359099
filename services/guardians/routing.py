"""The static routing table of spec 003 §7.2: guardian id -> ``"module:callable"``.

Nothing is discovered: no plugin registry, no entry points, nothing read from the
environment. A guardian exists when a line here names it, and it is imported only when a
run asks for it, so a guardian whose module is broken fails that run closed
(``guardian_import_failed``) instead of breaking every import of the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from contracts.errors import BlendmeshError

_CHECKS = "services.guardians.checks"

GUARDIAN_ROUTING_TABLE: dict[str, str] = {
    "output_connected": f"{_CHECKS}.node_graph:output_connected",
    "links_valid": f"{_CHECKS}.node_graph:links_valid",
    "nodes_known": f"{_CHECKS}.node_graph:nodes_known",
    "modifiers_evaluate": f"{_CHECKS}.modifiers:modifiers_evaluate",
    "names_valid": f"{_CHECKS}.names:names_valid",
    "polygon_budget": f"{_CHECKS}.budget:polygon_budget",
    "python_approved": f"{_CHECKS}.python_steps:python_approved",
    "hierarchy_valid": f"{_CHECKS}.hierarchy:hierarchy_valid",
    "transforms_sane": f"{_CHECKS}.transforms:transforms_sane",
}


class GuardianImportError(BlendmeshError, ImportError):
    """A routing entry that does not resolve to a callable."""


def resolve(target: object) -> Callable[[str], object]:
    """The callable a ``"module:callable"`` entry names, imported now.

    Raises ``GuardianImportError`` for a malformed entry, a missing attribute or one that
    is not callable; whatever importing the module raises propagates as it is (the
    orchestrator fails closed on any of them).
    """
    if not isinstance(target, str):
        raise GuardianImportError(f"routing entry {target!r} is not a string")
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute.isidentifier():
        raise GuardianImportError(f"routing entry {target!r} is not 'module:callable'")
    module = importlib.import_module(module_name)
    try:
        found = getattr(module, attribute)
    except AttributeError as exc:
        raise GuardianImportError(f"{module_name} has no {attribute!r}") from exc
    if not callable(found):
        raise GuardianImportError(f"{target} is not callable")
    return found
