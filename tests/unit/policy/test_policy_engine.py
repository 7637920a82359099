"""Policy decisions on the built-in Cedar policies (DESIGN §3 defaults, spec 002 §6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts.events import OperationDecision
from contracts.operations import Operation
from contracts.tools import ToolSpec
from services.policy.cedar import BUILTIN_DIR, CedarPolicy, PolicyLoadError, load_policies
from tests.support.catalog_fixture import CATALOG


def decision(
    tool: str, level: str, engine: CedarPolicy | None = None, **args: Any
) -> OperationDecision:
    op = Operation(operation_id="a", tool_name=tool, args=args, depends_on=[], safety_level=level)  # type: ignore[arg-type]
    return (engine or CedarPolicy.load()).decide("ana", op, CATALOG.get(tool), "default")


def decide(tool: str, level: str) -> str:
    return decision(tool, level).mode


@pytest.mark.clause("002-§policy.2")
def test_decide_when_read_only_allows() -> None:
    assert decide("scene.snapshot", "read_only") == "allow"


def test_decide_when_safe_write_allows() -> None:
    assert decide("object.create", "safe_write") == "allow"


@pytest.mark.clause("002-§policy.2", "000-§planner-schema.9")
def test_decide_when_destructive_requires_approval() -> None:
    assert decide("object.delete", "destructive") == "require_approval"


@pytest.mark.clause("000-§planner-schema.9")
def test_decide_when_plan_declares_destructive_for_safe_tool_requires_approval() -> None:
    assert decide("object.create", "destructive") == "require_approval"


def test_decide_when_modifier_apply_declared_safe_still_requires_approval() -> None:
    # The bridge declares modifier.apply destructive: the catalog's level wins over the plan's.
    apply = ToolSpec(
        name="modifier.apply",
        description="modifier.apply",
        input_schema={"type": "object"},
        safety_level="destructive",
        idempotence_class="non_idempotent",
    )
    args = {"object": "Box", "modifier": "Bevel"}
    op = Operation(
        operation_id="a",
        tool_name="modifier.apply",
        args=args,
        depends_on=[],
        safety_level="safe_write",
    )
    made = CedarPolicy.load().decide("ana", op, apply, "default")
    assert (made.mode, made.policy_ids) == (
        "require_approval",
        ["blendmesh.v1#approve-destructive"],
    )


@pytest.mark.clause("002-§policy.2")
def test_decide_when_tool_unknown_denies() -> None:
    assert decide("python.exec", "read_only") == "deny"


@pytest.mark.parametrize(
    ("tool", "level", "policy_id"),
    [
        ("scene.snapshot", "read_only", "blendmesh.v1#allow-read-only"),
        ("object.create", "safe_write", "blendmesh.v1#allow-safe-write"),
        ("object.delete", "destructive", "blendmesh.v1#approve-destructive"),
        ("python.exec", "read_only", "blendmesh.v1#deny-unknown-tool"),
    ],
)
@pytest.mark.clause("002-§policy.2")
def test_decision_when_made_names_determining_policy_ids(
    tool: str, level: str, policy_id: str
) -> None:
    assert decision(tool, level).policy_ids == [policy_id]


def test_policy_set_when_loaded_is_named_and_hashed() -> None:
    engine = CedarPolicy.load()
    assert engine.policy_set == "blendmesh.v1"
    assert engine.policy_set_hash.startswith("sha256:") and len(engine.policy_set_hash) == 71


def _copy_builtin(target: Path) -> Path:
    target.mkdir(exist_ok=True)
    for path in BUILTIN_DIR.glob("*.cedar"):
        (target / path.name).write_bytes(path.read_bytes())
    return target


def test_policy_set_hash_when_a_file_changes_changes(tmp_path: Path) -> None:
    folder = _copy_builtin(tmp_path / "p")
    before = load_policies(folder).policy_set_hash
    (folder / "blendmesh.v1.cedar").write_text(
        (folder / "blendmesh.v1.cedar").read_text() + "\n// a comment changes the rules' bytes\n"
    )
    assert load_policies(folder).policy_set_hash != before
    assert load_policies(BUILTIN_DIR).policy_set_hash == CedarPolicy.load().policy_set_hash


def test_user_policy_dir_when_it_forbids_a_tool_denies_naming_its_policy(tmp_path: Path) -> None:
    folder = _copy_builtin(tmp_path / "p")
    (folder / "studio.cedar").write_text(
        '@id("no-spheres")\n'
        "forbid (principal, action, resource)\n"
        '  when { context.args.primitive == "uv_sphere" };\n'
    )
    engine = CedarPolicy.load(folder)
    denied = decision("object.create", "safe_write", engine, primitive="uv_sphere")
    assert denied.mode == "deny" and denied.policy_ids == ["studio#no-spheres"]
    assert decision("object.create", "safe_write", engine, primitive="cube").mode == "allow"
    assert engine.policy_set == "blendmesh.v1+studio"


def test_user_policy_dir_when_it_asks_for_approval_on_a_user_requires_approval(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "strict.cedar").write_text(
        '@id("ana-asks")\n@outcome("require_approval")\n'
        'permit (principal == User::"ana", action, resource in Scene::"default");\n'
    )
    engine = CedarPolicy.load(folder)
    asked = decision("object.transform", "safe_write", engine, name="Box")
    assert asked.mode == "require_approval" and asked.policy_ids == ["strict#ana-asks"]


def test_user_policy_dir_when_nothing_permits_denies_by_default(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "empty.cedar").write_text("// nothing is allowed\n")
    denied = decision("scene.snapshot", "read_only", CedarPolicy.load(folder))
    assert denied.mode == "deny" and denied.policy_ids == ["empty#default-deny"]


def test_policy_file_when_malformed_error_names_file_and_line(tmp_path: Path) -> None:
    folder = _copy_builtin(tmp_path / "p")
    (folder / "broken.cedar").write_text(
        "// header\n"
        "permit (principal, action, resource);\n"
        "\n"
        "forbid (principal, action, resource)\n"
        "  when { context.x == };\n"
    )
    with pytest.raises(PolicyLoadError, match=r"broken\.cedar line 4: unexpected token"):
        CedarPolicy.load(folder)


def test_policy_file_when_outcome_unknown_error_names_policy(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "odd.cedar").write_text(
        '@id("maybe")\n@outcome("sometimes")\npermit (principal, action, resource);\n'
    )
    with pytest.raises(PolicyLoadError, match=r"odd\.cedar: policy 'maybe' has @outcome"):
        CedarPolicy.load(folder)


def test_policy_dir_when_missing_error_names_it(tmp_path: Path) -> None:
    with pytest.raises(PolicyLoadError, match="does not exist"):
        CedarPolicy.load(tmp_path / "nope")
