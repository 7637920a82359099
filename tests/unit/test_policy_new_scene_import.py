"""An import into a scene that has no head yet replaces nothing: policy allows it as a write.
Replacing an existing scene stays destructive. The scene heads decide, never the request."""

from __future__ import annotations

from contracts.events import ApprovalRequested, Approved, Planned, PolicyDecided, follow
from contracts.operations import convert_operation_set
from contracts.scene_files import import_plan, tool_entries
from contracts.tools import ToolCatalog, catalog_from_mcp
from services.executor.memory import StaticCatalog
from services.policy.cedar import CedarPolicy
from services.policy.handlers import PolicyHandlers, SceneOwner
from services.policy.memory import MemoryAllowlist
from tests.support.catalog_fixture import CATALOG
from tests.unit.test_handlers import History, requested

BLOB = "sha256:" + "0" * 64
WITH_SCENE_TOOLS = ToolCatalog(
    version="test",
    blender_version=CATALOG.blender_version,
    tools=[*CATALOG.tools, *catalog_from_mcp(tool_entries(), CATALOG.blender_version).tools],
)


def import_planned() -> Planned:
    plan = import_plan("q1", BLOB, 1234)  # declares itself destructive, as the door writes it
    return follow(
        requested(plan=plan),
        Planned,
        1.0,
        scene_id="s1",
        planner="plan",
        operation_set=convert_operation_set(plan),
        schedule=[op["operation_id"] for op in plan["operations"]],
        catalog_version="test",
    )


async def owned_by_ana(scene_id: str) -> str | None:
    return "ana"


async def nobody(scene_id: str) -> str | None:
    return None


def handlers(scene_owner: SceneOwner) -> PolicyHandlers:
    return PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=StaticCatalog(WITH_SCENE_TOOLS),
        history=History(),
        allowlist=MemoryAllowlist(),
        scene_owner=scene_owner,
    )


async def test_policy_when_import_into_scene_without_head_allows_it_as_a_write() -> None:
    decided, approved = await handlers(nobody).on_planned(import_planned())
    assert isinstance(decided, PolicyDecided) and isinstance(approved, Approved)
    assert approved.approved_by == "policy"
    (decision,) = decided.decisions
    assert decision.mode == "allow" and decision.safety_level == "safe_write"


async def test_policy_when_import_replaces_an_existing_scene_asks_a_person() -> None:
    decided, asked = await handlers(owned_by_ana).on_planned(import_planned())
    assert isinstance(decided, PolicyDecided) and isinstance(asked, ApprovalRequested)
    assert asked.operation_ids == ["scene_import"]
    assert decided.decisions[0].safety_level == "destructive"
