"""Tool registry: declarative tool metadata plus the uniform ToolResult envelope.

Every tool is registered with ``@tool(...)``. The registry validates arguments
against the tool's JSON schema (Draft 2020-12) before the implementation runs,
so a malformed call can never mutate the scene (spec 001 Phase 1).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import jsonschema
import msgspec

from blendmesh_addon.tools import Done, ToolFailure
from contracts.bridge import Compensation, ToolErrorCode, ToolResult
from contracts.canonical import canonical_json
from contracts.errors import BlendmeshError
from contracts.limits import argument_problem
from contracts.tools import DeterminismClass

from .said import plain

log = logging.getLogger("blendmesh.bridge")
SafetyLevel = Literal["read_only", "safe_write", "destructive"]
IdempotenceClass = Literal["idempotent", "repeatable_with_accumulation", "non_idempotent"]

ERROR_CODES: frozenset[str] = frozenset(get_args(ToolErrorCode))
SEED = "seed"  # the argument a seeded tool takes its seed in
SEED_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 2**31 - 1}

# Shared schema fragments, so every tool spells vectors and names identically.
NAME_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 63}
VEC3_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": 3,
    "maxItems": 3,
}


def vec3(description: str, bound: float | None = None) -> dict[str, Any]:
    """A 3-vector schema with a description (finite numbers are enforced separately);
    with ``bound``, every component must lie within -bound..bound."""
    if bound is None:
        return {**VEC3_SCHEMA, "description": description}
    items = {"type": "number", "minimum": -bound, "maximum": bound}
    return {**VEC3_SCHEMA, "items": items, "description": description}


def rgb(description: str) -> dict[str, Any]:
    """A linear RGB colour, each channel 0..1."""
    items = {"type": "number", "minimum": 0, "maximum": 1}
    return {**VEC3_SCHEMA, "items": items, "description": description}


def name_schema(description: str) -> dict[str, Any]:
    """A 1..63 character name schema with a description."""
    return {**NAME_SCHEMA, "description": description}


class ToolError(BlendmeshError, ToolFailure):
    """Raised by tool implementations to produce a structured failure.

    ``mutated`` must be True when the scene may already have been changed, so
    the executor knows it has to restore a checkpoint.
    """

    def __init__(self, code: ToolErrorCode, message: str, mutated: bool = False) -> None:
        assert code in ERROR_CODES, code
        ToolFailure.__init__(self, code, message, mutated)
        self.code: ToolErrorCode = code


@dataclass
class Outcome:
    """What a successful tool returns; the registry wraps it into a ToolResult."""

    data: dict[str, Any] | None
    mutated: bool
    message: str = ""
    compensation: Compensation | None = None


def outcome(done: Done, **data: Any) -> Outcome:
    """A shared tool body's result (``blendmesh_addon.tools``) as the bridge returns it,
    with ``data`` added to what the body said."""
    undo = done.compensation
    return Outcome(
        data={**done.data, **data},
        mutated=done.mutated,
        message=done.message,
        compensation=Compensation(tool=undo[0], arguments=undo[1]) if undo else None,
    )


@dataclass(frozen=True)
class Touches:
    """What a call may change, so the bridge recomputes only those digests of the scene
    hash (``digests.py``, ADR 0012). Every tool that writes declares it.

    ``names``: the argument or result keys whose values (a name, or a list of names) name
    what changed; any digest that names one of them is dropped too (a rename or a delete
    changes its parent's children, a modifier's target). An object named there brings its
    data and its action along; with ``node_groups`` also the groups its Geometry Nodes
    modifiers evaluate. ``everything``: the call may replace the whole scene.
    """

    names: tuple[str, ...] = ()
    node_groups: bool = False
    everything: bool = False

    def named(self, *sources: dict[str, Any] | None) -> set[str]:
        """The names the declared keys hold in ``sources`` (arguments, result data)."""
        found: set[str] = set()
        for source in sources:
            for key in self.names:
                value = (source or {}).get(key)
                if isinstance(value, str):
                    found.add(value)
                elif isinstance(value, list):
                    found.update(v for v in value if isinstance(v, str))
        return found


EVERYTHING = Touches(everything=True)


@dataclass(frozen=True)
class ToolSpec:
    """Static, public metadata of a tool: the executor plans and gates on it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    safety_level: SafetyLevel
    idempotence_class: IdempotenceClass
    compensation: str  # inverse tool name, "checkpoint" or "none"
    safety_mode: str = "headless_safe"
    determinism_class: DeterminismClass = "deterministic"
    min_blender_version: tuple[int, int, int] = (4, 2, 0)
    touches: Touches | None = None  # required unless read_only
    # What a successful call's ``data`` holds (MCP ``outputSchema``), where it is declared.
    output_schema: dict[str, Any] | None = None

    def to_mcp(self) -> dict[str, Any]:
        """The MCP ``tools/list`` entry, with blendmesh metadata under ``_meta``."""
        entry = self._mcp_entry()
        if self.output_schema is not None:
            entry["outputSchema"] = self.output_schema
        return entry

    def _mcp_entry(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": self.safety_level == "read_only",
                "destructiveHint": self.safety_level == "destructive",
                "idempotentHint": self.idempotence_class == "idempotent",
            },
            "_meta": {
                "blendmesh": {
                    "safety_level": self.safety_level,
                    "safety_mode": self.safety_mode,
                    "determinism_class": self.determinism_class,
                    "idempotence_class": self.idempotence_class,
                    "min_blender_version": list(self.min_blender_version),
                    "compensation": self.compensation,
                }
            },
        }


ToolFn = Callable[[dict[str, Any]], Outcome]


@dataclass
class RegisteredTool:
    """A spec bound to its implementation and a precompiled validator."""

    spec: ToolSpec
    fn: ToolFn
    validator: jsonschema.Draft202012Validator = field(repr=False)


REGISTRY: dict[str, RegisteredTool] = {}


def tool(**spec_fields: Any) -> Callable[[ToolFn], ToolFn]:
    """Register the decorated function as a tool described by ``ToolSpec(**spec_fields)``."""

    def register(fn: ToolFn) -> ToolFn:
        spec = ToolSpec(**spec_fields)
        if spec.name in REGISTRY:
            raise ValueError(f"duplicate tool {spec.name}")
        if spec.touches is None and spec.safety_level != "read_only":
            # Undeclared, its changes would never reach the cached scene hash.
            raise ValueError(f"tool {spec.name} writes but does not declare what it touches")
        if spec.determinism_class == "seeded" and not _takes_seed(spec.input_schema):
            # 001: a seeded result must name its seed, so the tool must be able to take one.
            raise ValueError(f"seeded tool {spec.name} takes no integer {SEED!r} argument")
        # Not checked against the metaschema here: that took 0.15 s of every Blender's
        # start for 40 constant schemas; tests/integration/test_bridge.py checks each one.
        REGISTRY[spec.name] = RegisteredTool(
            spec, fn, jsonschema.Draft202012Validator(spec.input_schema)
        )
        return fn

    return register


def _takes_seed(schema: dict[str, Any]) -> bool:
    declared = schema.get("properties", {}).get(SEED, {})
    return isinstance(declared, dict) and declared.get("type") == "integer"


def pinned_seed(arguments: dict[str, Any]) -> int:
    """The seed a seeded tool called without one runs with: derived from its canonical
    arguments, so a replay of the same call pins the same seed (000 §Executor Guarantees
    1: nondeterminism only behind an adapter that pins the seed)."""
    digest = hashlib.sha256(canonical_json(arguments)).digest()
    return int.from_bytes(digest[:4], "big") & (2**31 - 1)


def list_specs() -> list[ToolSpec]:
    """All registered specs sorted by name (stable output for clients and tests)."""
    return [REGISTRY[n].spec for n in sorted(REGISTRY)]


def failed(code: ToolErrorCode, message: str, mutated: bool = False) -> ToolResult:
    """A ToolResult for a call that did not do what was asked."""
    return ToolResult(ok=False, error_code=code, message=message, mutated=mutated)


def _non_finite_path(value: Any, path: str) -> str | None:
    # Python's json module accepts Infinity/NaN, and jsonschema's "number"
    # accepts them too, so they must be rejected explicitly.
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite_path(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _non_finite_path(item, f"{path}[{index}]")
            if found:
                return found
    return None


def validate(reg: RegisteredTool, arguments: Any) -> str | None:
    """Return a human-readable reason the arguments are invalid, or None."""
    # The planner refuses these first; a direct caller meets the same check here.
    unusable = argument_problem(arguments)
    if unusable:
        return unusable
    bad = _non_finite_path(arguments, "arguments")
    if bad:
        return f"{bad}: non-finite numbers are not allowed"
    error = jsonschema.exceptions.best_match(reg.validator.iter_errors(arguments))
    if error is None:
        return None
    where = "arguments" + "".join(
        f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
    )
    return f"{where}: {error.message}"


def call(name: str, arguments: dict[str, Any], blender_version: tuple[int, ...]) -> ToolResult:
    """Run a tool and always return a ToolResult; never raises for tool failures."""
    reg = REGISTRY.get(name)
    if reg is None:
        return failed("not_found", f"unknown tool {name!r}")
    kind = reg.spec.determinism_class
    if tuple(blender_version) < reg.spec.min_blender_version:
        needed = ".".join(map(str, reg.spec.min_blender_version))
        return _declared(failed("capability_missing", f"{name} needs Blender >= {needed}"), kind)
    reason = validate(reg, arguments)
    if reason:
        return _declared(failed("invalid_input", reason), kind)
    seed: int | None = None
    if kind == "seeded":
        seed = arguments.get(SEED)
        if seed is None:
            seed = pinned_seed(arguments)
            arguments = {**arguments, SEED: seed}
    try:
        out = reg.fn(arguments)
    except ToolFailure as err:  # the bridge's ToolError or a shared body's refusal
        code = err.code if err.code in ERROR_CODES else "internal_error"
        return _declared(failed(code, err.message, err.mutated), kind)  # type: ignore[arg-type]
    except Exception as exc:  # a tool bug must not kill the bridge; logged in full
        # We cannot know how far a crashing writer got, so assume it mutated.
        mutated = reg.spec.safety_level != "read_only"
        log.exception("tool %s failed", name)  # the whole of it, for the operator
        said = plain(f"{type(exc).__name__}: {exc}")  # for the user and the model
        return _declared(failed("internal_error", said, mutated), kind)
    return ToolResult(
        ok=True,
        message=out.message or f"{name} ok",
        data=out.data,
        mutated=out.mutated,
        compensation=out.compensation,
        # The executor keeps the result of a call it could not repeat, instead of a replay.
        determinism_class=kind,
        seed=seed,
    )


def _declared(result: ToolResult, kind: DeterminismClass) -> ToolResult:
    return msgspec.structs.replace(result, determinism_class=kind)
