"""The policy engine on Cedar (``cedarpy``): versioned ``.cedar`` files, three outcomes.

Cedar answers permit or forbid; blendmesh needs allow, require_approval and deny. A
satisfied ``forbid`` denies; a satisfied ``permit`` annotated ``@outcome("require_approval")``
asks a person and wins over plain permits; other permits allow; nothing satisfied denies
(docs/adr/0005-cedar-three-outcomes.md). Each policy's id is ``<file stem>#<@id>``, and the
policy set is identified by the sha256 of its files, so every decision names the exact
rules that made it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cedarpy

from contracts.errors import BlendmeshError
from contracts.events import Mode, OperationDecision
from contracts.operations import SAFETY_ORDER, Operation
from contracts.tools import ToolSpec

BUILTIN_DIR = Path(__file__).parent / "policies"
# Built-in policy sets a deployment picks by name (BLENDMESH_POLICY_PROFILE): "default"
# lets safe writes run unasked; "approve-side-effects" asks for every side effect, as
# spec 002 §6 says (docs/adr/0020).
PROFILE_ENV = "BLENDMESH_POLICY_PROFILE"
PROFILES: dict[str, Path] = {
    "default": BUILTIN_DIR,
    "approve-side-effects": Path(__file__).parent / "profiles" / "approve-side-effects",
}
OUTCOMES = ("allow", "require_approval")
OBJECT_KEYS = ("name", "object")  # argument keys that name the object an operation acts on
_MAX_LONG = 2**63 - 1


class PolicyLoadError(BlendmeshError, ValueError):
    """A policy file cannot be used; the message names the file and the line."""


def _error_line(text: str) -> int:
    """The first line of the first policy Cedar cannot parse (cedarpy gives no position)."""
    lines = text.splitlines()
    start = 0
    for end in range(1, len(lines) + 1):
        chunk = "\n".join(lines[start:end])
        try:
            cedarpy.policies_to_json_str(chunk)
        except ValueError:
            continue
        start = end
    for number in range(start, len(lines)):
        stripped = lines[number].strip()
        if stripped and not stripped.startswith("//"):
            return number + 1
    return max(start, 1)


def _load_file(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The file's bytes and its policies in Cedar JSON, keyed ``<stem>#<id>``."""
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(cedarpy.policies_to_json_str(text))
    except ValueError as exc:
        raise PolicyLoadError(f"{path} line {_error_line(text)}: {exc}") from None
    if parsed.get("templates"):
        raise PolicyLoadError(f"{path}: templates (?principal, ?resource) are not supported")
    policies: dict[str, Any] = {}
    for parser_id, policy in parsed.get("staticPolicies", {}).items():
        annotations = policy.get("annotations", {})
        local = annotations.get("id") or parser_id
        outcome = annotations.get("outcome")
        if outcome is not None and (outcome not in OUTCOMES or policy["effect"] != "permit"):
            raise PolicyLoadError(
                f"{path}: policy {local!r} has @outcome({outcome!r}); only permit policies "
                f"take an @outcome, one of {', '.join(OUTCOMES)}"
            )
        policy_id = f"{path.stem}#{local}"
        if policy_id in policies:
            raise PolicyLoadError(f"{path}: two policies have the @id {local!r}")
        policies[policy_id] = policy
    return raw, policies


@dataclass(frozen=True)
class LoadedPolicies:
    policy_set: str  # the file stems, e.g. "blendmesh.v1"
    policy_set_hash: str  # "sha256:<hex>" over file names and contents
    handle: cedarpy.PolicySet
    approval_ids: frozenset[str]  # policies with @outcome("require_approval")


def policy_folder(policy_dir: Path | None, profile: str | None) -> Path:
    """The folder of the rules to load: a folder of one's own (BLENDMESH_POLICY_DIR) or a
    built-in profile by name; raises PolicyLoadError for an unknown name or for both."""
    if profile and policy_dir is not None:
        raise PolicyLoadError(
            f"both BLENDMESH_POLICY_DIR and {PROFILE_ENV} are set; set one: a profile is a "
            "built-in folder of rules"
        )
    if policy_dir is not None:
        return policy_dir
    name = profile or "default"
    if name not in PROFILES:
        raise PolicyLoadError(
            f"{PROFILE_ENV}={name!r} is not a policy profile; use one of {', '.join(PROFILES)}"
        )
    return PROFILES[name]


def load_policies(directory: Path) -> LoadedPolicies:
    """Every ``*.cedar`` file of ``directory``, parsed once; raises PolicyLoadError."""
    if not directory.is_dir():
        raise PolicyLoadError(f"policy folder {directory} does not exist")
    files = sorted(directory.glob("*.cedar"))
    if not files:
        raise PolicyLoadError(f"policy folder {directory} has no .cedar files")
    digest = hashlib.sha256()
    merged: dict[str, Any] = {}
    for path in files:
        raw, policies = _load_file(path)
        digest.update(path.name.encode() + b"\x00" + hashlib.sha256(raw).digest())
        merged.update(policies)
    est = {"staticPolicies": merged, "templates": {}, "templateLinks": []}
    try:
        handle = cedarpy.PolicySet.from_json_str(json.dumps(est))
    except ValueError as exc:
        raise PolicyLoadError(f"policy folder {directory}: {exc}") from None
    approval = frozenset(
        pid for pid, p in merged.items() if p.get("annotations", {}).get("outcome") == OUTCOMES[1]
    )
    return LoadedPolicies(
        policy_set="+".join(p.stem for p in files),
        policy_set_hash="sha256:" + digest.hexdigest(),
        handle=handle,
        approval_ids=approval,
    )


def cedar_value(value: Any) -> Any:
    """A JSON value Cedar accepts: no floats (strings instead), lists become sets."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_MAX_LONG <= value <= _MAX_LONG else str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return [cedar_value(v) for v in value if v is not None]
    if isinstance(value, dict):
        return {str(k): cedar_value(v) for k, v in value.items() if v is not None}
    return str(value)


def _uid(kind: str, ident: str) -> dict[str, str]:
    return {"type": kind, "id": ident}


class CedarPolicy:
    """The engine: one Cedar request per operation against the loaded policy set."""

    def __init__(self, policies: LoadedPolicies) -> None:
        self.policies = policies
        self.policy_set = policies.policy_set
        self.policy_set_hash = policies.policy_set_hash

    @classmethod
    def load(cls, directory: Path | None = None) -> CedarPolicy:
        return cls(load_policies(directory or BUILTIN_DIR))

    def decide(
        self,
        user: str,
        op: Operation,
        tool: ToolSpec | None,
        scene_id: str = "default",
        role: str = "lead",
    ) -> OperationDecision:
        if tool is None:
            level, group = op.safety_level, "unregistered"
        else:
            level = max(op.safety_level, tool.safety_level, key=SAFETY_ORDER.__getitem__)
            group = level
        scene = _uid("Scene", scene_id)
        entities: list[dict[str, Any]] = [
            {"uid": _uid("Action", op.tool_name), "attrs": {}, "parents": [_uid("Action", group)]},
            {"uid": _uid("Action", group), "attrs": {}, "parents": []},
            {"uid": scene, "attrs": {}, "parents": []},
            {"uid": _uid("User", user), "attrs": {"role": role}, "parents": []},
        ]
        resource = scene
        named = next((op.args[k] for k in OBJECT_KEYS if isinstance(op.args.get(k), str)), None)
        if named is not None:
            resource = _uid("Object", named)
            entities.append({"uid": resource, "attrs": {}, "parents": [scene]})
        request = {
            "principal": _uid("User", user),
            "action": _uid("Action", op.tool_name),
            "resource": resource,
            "context": {
                "tool": op.tool_name,
                "safety_level": level,
                "scene": scene_id,
                "role": role,
                "args": cedar_value(op.args),
            },
        }
        result = cedarpy.is_authorized(request, self.policies.handle, entities)
        reasons = sorted(result.diagnostics.reasons)
        if not result.allowed:
            mode: Mode = "deny"
            why = (
                f"{op.tool_name} is forbidden by {', '.join(reasons)}"
                if reasons
                else f"no policy permits {op.tool_name} ({level})"
            )
            if tool is None:
                why = f"{op.tool_name} is not a registered tool"
            elif not reasons and result.diagnostics.errors:
                # Cedar skips a policy whose condition fails to evaluate; say which did.
                why += f"; policy errors: {'; '.join(result.diagnostics.errors)}"
            reasons = reasons or [f"{self.policy_set}#default-deny"]
        elif approving := [r for r in reasons if r in self.policies.approval_ids]:
            mode, reasons = "require_approval", approving
            why = f"{op.tool_name} is {level}; a person must approve it"
        else:
            mode, why = "allow", f"{op.tool_name} is {level}"
        return OperationDecision(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=level,
            mode=mode,
            reason=why,
            policy_ids=reasons,
        )
