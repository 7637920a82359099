"""Spec 001 §Determinism Requirements: every tool result and every receipt carries its
tool's determinism class under the spec's name, and a seeded tool always runs with a
seed it records: the caller's, or one pinned from its arguments."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from contracts.bridge import CallToolResult, ToolResult
from contracts.events import OperationSucceeded, RunCompleted, follow
from contracts.fold import fold_run
from contracts.tools import ToolCatalog, catalog_from_mcp
from services.bridge import registry
from services.bridge.registry import SEED, Outcome, pinned_seed
from services.executor.domain.journal import op_key
from tests.support.registry_tools import BLENDER, RegistryBridge, registered
from tests.support.runner_contract import Recorder, approved, runner
from tests.unit.test_handlers import requested


@pytest.fixture
def catalog() -> Iterator[ToolCatalog]:
    with registered() as tools:
        yield tools


@pytest.mark.clause("001-§determinism.1", "001-§return.1", "001-§core-concepts.5")
@pytest.mark.usefixtures("catalog")
def test_registry_result_when_tool_is_nondeterministic_says_so_on_the_wire() -> None:
    result = registry.call("test.noise", {"name": "A"}, BLENDER)
    assert result.ok and result.determinism_class == "nondeterministic" and result.seed is None
    wire = msgspec.json.decode(msgspec.json.encode(result))
    assert wire["determinism_class"] == "nondeterministic" and "determinism" not in wire


@pytest.mark.clause("001-§determinism.2", "000-§executor-guarantees.3")
@pytest.mark.usefixtures("catalog")
def test_registry_result_when_seeded_tool_has_no_seed_pins_one_from_its_arguments() -> None:
    first = registry.call("test.scatter", {"name": "A"}, BLENDER)
    again = registry.call("test.scatter", {"name": "A"}, BLENDER)
    other = registry.call("test.scatter", {"name": "B"}, BLENDER)
    assert first.determinism_class == "seeded" and first.seed == pinned_seed({"name": "A"})
    assert again.seed == first.seed and again.data == first.data  # a replay rebuilds it
    assert other.seed != first.seed
    assert first.data is not None and other.data is not None
    assert 0 <= first.seed < 2**31  # type: ignore[operator]


@pytest.mark.clause("001-§determinism.2")
@pytest.mark.usefixtures("catalog")
def test_registry_result_when_seeded_tool_is_given_a_seed_runs_with_it_and_records_it() -> None:
    result = registry.call("test.scatter", {"name": "A", SEED: 7}, BLENDER)
    assert result.ok and result.seed == 7
    refused = registry.call("test.scatter", {"name": "A", SEED: -1}, BLENDER)
    assert refused.error_code == "invalid_input" and "seed" in refused.message


@pytest.mark.clause("001-§return.1", "001-§error-codes.1", "001-§error-codes.9")
@pytest.mark.usefixtures("catalog")
def test_registry_failure_when_tool_is_known_still_carries_its_class() -> None:
    crashed = registry.call("test.broken", {"name": "A"}, BLENDER)
    assert crashed.error_code == "internal_error" and crashed.mutated
    assert crashed.determinism_class == "seeded"
    refused = registry.call("test.noise", {"name": ""}, BLENDER)
    assert refused.error_code == "invalid_input"
    assert refused.determinism_class == "nondeterministic"
    unknown = registry.call("test.absent", {}, BLENDER)
    assert unknown.error_code == "not_found" and unknown.determinism_class is None


@pytest.mark.clause("001-§determinism.2")
def test_registry_when_seeded_tool_takes_no_seed_refuses_to_register_it() -> None:
    with pytest.raises(ValueError, match=r"seeded tool test\.seedless takes no integer 'seed'"):
        registry.tool(
            name="test.seedless",
            description="",
            input_schema={"type": "object"},
            safety_level="read_only",
            idempotence_class="idempotent",
            compensation="none",
            determinism_class="seeded",
        )(lambda args: Outcome(None, mutated=False))
    assert "test.seedless" not in registry.REGISTRY


@pytest.mark.clause("001-§determinism.2")
def test_tool_result_when_seeded_success_names_no_seed_is_refused_at_decode() -> None:
    with pytest.raises(ValueError, match="must carry its seed"):
        ToolResult(ok=True, mutated=True, determinism_class="seeded")
    bad = {"ok": True, "mutated": False, "determinism_class": "seeded"}
    envelope = {"content": [], "structuredContent": bad, "isError": False}
    with pytest.raises(msgspec.ValidationError, match="seed"):
        msgspec.convert(envelope, CallToolResult)
    # the wire name before the spec's
    with pytest.raises(msgspec.ValidationError, match="unknown field `determinism`"):
        msgspec.convert(
            {"ok": True, "mutated": False, "determinism": {"class": "seeded"}}, ToolResult
        )


@pytest.mark.clause("001-§determinism.1", "001-§return.1")
async def test_receipts_when_tools_of_every_class_run_carry_class_and_seed_everywhere(
    catalog: ToolCatalog, tmp_path: Path
) -> None:
    bridge = RegistryBridge()
    run = runner(bridge, tmp_path)
    run.catalog = lambda: catalog
    rec = Recorder()
    plan = approved(
        ("op01", "object.create", {"primitive": "cube", "name": "Box"}),
        ("op02", "test.scatter", {"name": "Dots"}),
        ("op03", "test.scatter", {"name": "Dots2", SEED: 42}),
    )
    executed = await run.run(plan, rec, requested=requested("x"))
    assert executed.failure is None
    expected = [
        ("deterministic", None),
        ("seeded", pinned_seed({"name": "Dots"})),
        ("seeded", 42),
    ]
    assert [(r.determinism_class, r.seed) for r in executed.receipts] == expected
    announced = [e.receipt for e in rec.of(OperationSucceeded)]
    assert [(r.determinism_class, r.seed) for r in announced] == expected
    # What `blendmesh run --json` prints and the HTTP door answers: the folded run.
    done = follow(
        plan,
        RunCompleted,
        9.0,
        summary="",
        blend_path=None,
        scene_hash=None,
        receipts=executed.receipts,
    )
    asked = msgspec.structs.replace(requested("x"), run_id=plan.run_id)
    folded = fold_run([asked, plan, executed, done])
    assert folded is not None
    printed = msgspec.json.decode(msgspec.json.encode(folded))
    assert [(r["determinism_class"], r["seed"]) for r in printed["receipts"]] == expected


@pytest.mark.clause("000-§executor-guarantees.3", "001-§execute.2")
async def test_result_when_nondeterministic_is_kept_as_an_image_and_seeded_is_not(
    catalog: ToolCatalog, tmp_path: Path
) -> None:
    bridge = RegistryBridge()
    run = runner(bridge, tmp_path)
    run.catalog = lambda: catalog
    plan = approved(
        ("op01", "test.noise", {"name": "Dust"}), ("op02", "test.scatter", {"name": "D"})
    )
    executed = await run.run(plan, Recorder())
    assert executed.failure is None
    # The class the registry answered decides (results.py): only the nondeterministic
    # result is stored to be loaded instead of replayed (ADR 0011).
    entries = {
        op: await run.journal.get(op_key("u", "s1", plan.request_id, op)) for op in ("op01", "op02")
    }
    assert entries["op01"] is not None and entries["op01"].result_image is not None
    assert entries["op02"] is not None and entries["op02"].result_image is None
    assert (run.scenes.store.root / entries["op01"].result_image).is_file()  # type: ignore[attr-defined]


@pytest.mark.clause("001-§idempotence.1", "001-§idempotence.2")
def test_tools_list_when_a_tool_accumulates_discloses_it_to_the_catalog() -> None:
    registry.tool(
        name="test.stamp",
        description="adds one more stamp on every call",
        input_schema={"type": "object"},
        safety_level="safe_write",
        idempotence_class="repeatable_with_accumulation",
        compensation="checkpoint",
        touches=registry.EVERYTHING,
    )(lambda args: Outcome({}, mutated=True))
    try:
        entry = registry.REGISTRY["test.stamp"].spec.to_mcp()
    finally:
        registry.REGISTRY.pop("test.stamp")
    assert entry["annotations"]["idempotentHint"] is False
    assert entry["_meta"]["blendmesh"]["idempotence_class"] == "repeatable_with_accumulation"
    spec = catalog_from_mcp([entry], "5.0.1").get("test.stamp")
    assert spec is not None and spec.idempotence_class == "repeatable_with_accumulation"
