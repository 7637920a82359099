"""``python.safe`` and ``python.trusted``: spec 004 PYTHON steps, run in the OS sandbox.

Neither runs in the bridge's own Blender. The bridge hands its scene to a sandboxed
Blender, that process runs the code once (sandbox/child.py) and hands back the scene it
leaves, and once the sandbox is dead the bridge opens a copy of it the way
``blendmesh/scene.load`` does, refusing it when it links a library or refers to an
external file. Any failure
leaves the bridge's scene as it was, so ``mutated`` stays False.
docs/python-steps.md says what each mode may do; ADR 0009 says why it is built so.
"""

from __future__ import annotations

import atexit
import os
from typing import Any

import bpy

from contracts.bridge import ToolErrorCode
from contracts.geonodes import MAX_PYTHON_TIMEOUT_MS, PYTHON_CHARS_CEILING
from contracts.python_steps import (
    CODE_SHA256_PATTERN,
    DEFAULT_TIMEOUT_MS,
    FILE_SIZE_MIB,
    MAX_OUTPUT_BYTES,
    MEMORY_MIB,
    OPEN_FILES,
    SCENE_IO_MS,
    THREADS,
    code_sha256,
)
from services.bridge.budget.caps import PROPERTY_CAPS

from ..registry import EVERYTHING, Outcome, ToolError, tool
from ..sandbox.box import SandboxUnavailable
from ..sandbox.handoff import OutputRefused
from ..sandbox.pool import Pool
from ..sandbox.warm import Answer
from . import scene
from .answers import BOOLEAN, STRING, answer

POOL = Pool(os.environ)
atexit.register(POOL.close)  # the bridge's own exit closes it (__main__.leave); this, any other

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "code_sha256"],
    "properties": {
        "code": {"type": "string", "minLength": 1, "maxLength": PYTHON_CHARS_CEILING},
        "timeout_ms": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_PYTHON_TIMEOUT_MS,
            "default": DEFAULT_TIMEOUT_MS,
            "description": "Wall-clock budget of the code; past it the step is stopped.",
        },
        "code_sha256": {
            "type": "string",
            "pattern": CODE_SHA256_PATTERN,
            "description": "sha256:<hex> of the UTF-8 code: what an approval names.",
        },
    },
}

# How each way a step can fail reaches the executor (docs/python-steps.md, "Errors").
_CODES: dict[str, tuple[ToolErrorCode, str]] = {
    "compile": ("invalid_input", "fix the code"),
    "error": ("invalid_input", "fix the code"),
    "refused": ("policy_refused", ""),  # the guard's message says what to do
    "sandbox": ("policy_refused", "a step sees only its own working folder, no network and "
                "no processes"),
    "forbidden": ("policy_refused", "a step may not start processes"),
    "memory": ("policy_refused", f"a step may use {MEMORY_MIB} MiB beyond Blender's own"),
    "output": ("policy_refused", f"print at most {MAX_OUTPUT_BYTES} bytes"),
    "timeout": ("timeout", "make it faster or raise timeout_ms"),
    "crashed": ("internal_error", "nothing changed; the step may have exhausted a limit"),
}  # fmt: skip


def _job(mode: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": mode,
        "code": args["code"],
        "timeout_ms": args.get("timeout_ms", DEFAULT_TIMEOUT_MS),
        "scene_io_ms": SCENE_IO_MS,
        "memory_mib": MEMORY_MIB,
        "file_size_mib": FILE_SIZE_MIB,
        "open_files": OPEN_FILES,
        "threads": THREADS,
        "output_bytes": MAX_OUTPUT_BYTES,
        "caps": {name: cap for name, (cap, _) in PROPERTY_CAPS.items()},
    }


def _refusal(mode: str, answer: Answer, source: str) -> ToolError:
    code, what_to_do = _CODES.get(answer.kind, _CODES["crashed"])
    said = f"; it printed: {answer.output[-500:]!r}" if answer.output else ""
    advice = f" ({what_to_do})" if what_to_do else ""
    if answer.kind == "compile" and "\n" not in source and "\\n" in source:
        # JSON escaped twice (as in spec 004's own example) leaves "\n" where a line
        # break was meant; say so rather than leave the model guessing.
        advice += (
            "; the code has no line breaks but holds the two characters \\n: send real "
            "line breaks (one JSON escape, \\n in the JSON text)"
        )
    return ToolError(code, f"python.{mode}: {answer.message}{advice}{said}")


def _save(path: str) -> None:
    status = bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    if "FINISHED" not in status:
        raise ToolError("internal_error", f"could not hand the scene to the sandbox: {status}")


def run(mode: str, args: dict[str, Any]) -> Outcome:
    """Run one step in a fresh sandboxed Blender and take over the scene it saved."""
    digest = code_sha256(args["code"])
    if args["code_sha256"] != digest:
        raise ToolError(
            "invalid_input",
            f"code_sha256 is {args['code_sha256']} but the code hashes to {digest}; send the "
            "hash of exactly this code (UTF-8), as the approval names it",
        )
    try:
        with POOL.slot() as warm:
            _save(str(warm.scene_in))
            answer = warm.run(_job(mode, args))
            # Nothing of the step is read while any process of it lives.
            warm.kill()
            if not answer.ok:
                raise _refusal(mode, answer, args["code"])
            if answer.wrote:
                try:
                    taken = warm.take_output(FILE_SIZE_MIB * 1024 * 1024)
                except OutputRefused as err:
                    raise ToolError(
                        "policy_refused", f"python.{mode}: the step's saved scene {err}"
                    ) from None
                try:
                    scene.load(str(taken))
                except scene.SceneRefused as err:
                    # A step may not bring in a library or an external file either.
                    raise ToolError(
                        "policy_refused", f"python.{mode}: the step's scene: {err}", err.changed
                    ) from None
                except scene.SceneError as err:
                    # A failed open may leave a half-read scene: the executor must restore.
                    raise ToolError("internal_error", str(err), mutated=True) from None
    except SandboxUnavailable as err:
        raise ToolError("capability_missing", f"python.{mode}: {err}") from None
    output = answer.output
    data = {
        "mode": mode,
        "code_sha256": digest,
        "output": output,
        "output_bytes": len(output.encode("utf-8")),
        "wrote": answer.wrote,
    }
    return Outcome(data=data, mutated=answer.wrote, message=f"python.{mode} ran")


def ran(mode: str) -> dict[str, Any]:
    """What a step in ``mode`` answers: its code's hash, what it printed, whether it wrote."""
    return answer(
        {
            "mode": {"const": mode},
            "code_sha256": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            "output": STRING,
            "output_bytes": {"type": "integer", "minimum": 0, "maximum": MAX_OUTPUT_BYTES},
            "wrote": BOOLEAN,
        }
    )


_COMMON = {
    "input_schema": INPUT_SCHEMA,
    "idempotence_class": "non_idempotent",
    "compensation": "checkpoint",
    "determinism_class": "nondeterministic",
}


@tool(
    name="python.safe",
    touches=EVERYTHING,
    description=(
        "Run a spec 004 PYTHON step in safe mode: RestrictedPython in an OS sandbox, where "
        "`import bpy` is a small facade over objects, transforms, modifiers, Geometry Nodes "
        "inputs and materials (docs/python-steps.md). print() output is returned."
    ),
    output_schema=ran("safe"),
    safety_level="safe_write",
    **_COMMON,
)
def python_safe(args: dict[str, Any]) -> Outcome:
    return run("safe", args)


@tool(
    name="python.trusted",
    touches=EVERYTHING,
    description=(
        "Run a spec 004 PYTHON step in trusted mode: real bpy, confined by the OS sandbox "
        "only (no network, no files but its own folder, no processes). Needs a person's "
        "approval of exactly this code."
    ),
    output_schema=ran("trusted"),
    safety_level="destructive",
    **_COMMON,
)
def python_trusted(args: dict[str, Any]) -> Outcome:
    return run("trusted", args)
