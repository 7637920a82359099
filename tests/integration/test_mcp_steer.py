"""``rerun_run`` and ``fork_run`` through the gateway's ``/mcp`` with the official SDK's
client, on a real mesh (issue 42, ADR 0063): a re-run skips what its original committed,
a fork waits for a person to approve its revert, and another user's run, an operation out
of range or a plan that is not one are refused."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from services.runtime.service.settings import Settings
from tests.support.gateways import gateway_fixture, mcp_door
from tests.support.mcp_plans import error_type, structured
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmmcpsteer", user="local", previews=False)


mesh = mesh_fixture(client="test-mcp-steer")


gateway = gateway_fixture(TOKENS, path="/mcp")


door = mcp_door


def create(op_id: str, name: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.create",
            "args": {"primitive": "cube", "name": name}, "depends_on": deps or [],
            "safety_level": "safe_write"}  # fmt: skip


def move(op_id: str, name: str, deps: list[str]) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.transform",
            "args": {"name": name, "location": [1.0, 2.0, 3.0]}, "depends_on": deps,
            "safety_level": "safe_write"}  # fmt: skip


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def failed(gateway: str) -> tuple[str, list[dict[str, Any]]]:
    """Ana's run on scene `steer` that created Here and failed moving Ghost."""
    ops = [create("a", "Here"), move("b", "Ghost", ["a"])]
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool(
            "run", {"scene_id": "steer", "plan": {"request_id": "req-mcp", "operations": ops}}
        )
    assert structured(answer)["status"] == "failed", answer.content
    return structured(answer)["run_id"], ops


async def test_rerun_run_when_failed_completes_and_skips_what_was_committed(
    gateway: str, failed: tuple[str, list[dict[str, Any]]]
) -> None:
    run_id, ops = failed
    edited = {"request_id": "x", "operations": [ops[0], move("b", "Here", ["a"])]}
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool(
            "rerun_run", {"run_id": run_id, "from_op": 2, "plan": edited}
        )
    result = structured(answer)
    assert not answer.isError and result["status"] == "completed", answer.content
    assert {r["operation_id"]: r["status"] for r in result["receipts"]} == {
        "a": "skipped_idempotent", "b": "succeeded"
    }  # fmt: skip


async def test_fork_run_waits_for_a_person_to_approve_the_revert(gateway: str) -> None:
    async with door(gateway, "tok-ana") as session:
        for name in ("Base", "Alpha"):
            plan = {"request_id": f"req-fork-{name}", "operations": [create("a", name)]}
            done = await session.call_tool("run", {"scene_id": "forked", "plan": plan})
            assert structured(done)["status"] == "completed", done.content
        answer = await session.call_tool("fork_run", {"run_id": structured(done)["run_id"]})
    result = structured(answer)
    assert result["status"] == "awaiting_confirmation", answer.content
    assert [o["tool"] for o in result["approval"]["operations"]] == ["scene.revert"]


async def test_steering_tools_when_run_is_another_users_answer_not_found(
    gateway: str, failed: tuple[str, list[dict[str, Any]]]
) -> None:
    run_id, _ = failed
    async with door(gateway, "tok-ben") as session:
        for name, args in (("rerun_run", {"from_op": 1}), ("fork_run", {})):
            answer = await session.call_tool(name, {"run_id": run_id, **args})
            assert error_type(answer) == "NotFound", answer.content
            assert f"no run {run_id}" in str(structured(answer)["error"]["message"])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"from_op": 0}, None),
        ({"from_op": "2"}, None),
        ({"from_op": 3}, "has operations 1 to 2"),
        ({"from_op": 1, "plan": {"operations": []}}, "not a valid operation set"),
    ],
)
async def test_rerun_run_when_arguments_are_wrong_answers_validation_error(
    gateway: str, failed: tuple[str, list[dict[str, Any]]], args: dict[str, Any], said: str | None
) -> None:
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool("rerun_run", {"run_id": failed[0], **args})
    assert error_type(answer) == "ValidationError", answer.content
    if said is not None:
        assert said in str(structured(answer)["error"]["message"])
