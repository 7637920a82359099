"""Spec 001 host profiles: each door declares the host its requests came through, and a
caller's determinism request reaches the request the executor's gate reads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import msgspec
import pydantic
import pytest

from contracts.door import run_prefix
from contracts.events import AnyEvent, OperationSucceeded, Planned, RunRequested, follow
from contracts.operations import convert_operation_set
from contracts.receipts import Receipt, RunResult
from contracts.session import BUS, CLI, HTTP, MCP_HTTP, MCP_STDIO
from services.doors.bus.handlers import DoorHandlers
from services.doors.core.requests import build_request
from services.doors.gateway.schemas import RunBody, run_out
from services.doors.mcp.tools import RUN
from services.runtime.server.identity import UserEntry
from services.runtime.service.settings import Settings

ANA = UserEntry(name="ana", keys=())


class Reads:
    """A mesh with no runs, threads or scenes yet."""

    async def requested(self, run_id: str) -> RunRequested | None:
        return None

    async def events(self, run_id: str) -> Sequence[AnyEvent]:
        return []

    async def thread_owner(self, thread_id: str) -> str | None:
        return None

    async def scene_owner(self, scene_id: str) -> str | None:
        return None

    async def audit_records(self, run_id: str) -> list[dict[str, Any]]:
        return []

    async def runs_of(self, user: str, limit: int) -> list[dict[str, Any]]:
        return []

    async def scenes_of(self, user: str, limit: int) -> list[dict[str, Any]]:
        return []


class Writer:
    def __init__(self) -> None:
        self.published: list[Any] = []

    async def publish(self, event: Any) -> int:
        self.published.append(event)
        return len(self.published)


@pytest.mark.clause("001-§core-concepts.2", "001-§core-concepts.4")
def test_build_request_when_a_door_declares_its_host_carries_it_and_the_determinism() -> None:
    for host in (CLI, HTTP, MCP_STDIO, MCP_HTTP):
        request = build_request(
            user="ana", scene_id="s", prompt="add a cube", host=host, determinism="required"
        )
        decoded = msgspec.json.decode(msgspec.json.encode(request), type=RunRequested)
        assert (decoded.host, decoded.determinism) == (host, "required")
    assert build_request(user="ana", scene_id="s", prompt="x").host == BUS


@pytest.mark.clause("001-§core-concepts.2")
async def test_bus_door_when_a_client_claims_another_host_records_the_bus() -> None:
    built = build_request(user="ana", scene_id="s", prompt="x", host=CLI, determinism="required")
    claimed = msgspec.structs.replace(built, run_id=f"{run_prefix('ana')}-{built.run_id}")
    writer = Writer()
    reply = await DoorHandlers(reads=Reads(), writer=writer).submit(
        ANA, msgspec.json.encode(claimed)
    )
    assert reply.ok
    (published,) = writer.published
    assert published.host == BUS and published.determinism == "required"


@pytest.mark.clause("001-§determinism.3")
def test_http_body_when_determinism_is_not_a_known_request_is_refused_naming_it() -> None:
    assert RunBody(prompt="x", determinism="required").determinism == "required"
    assert RunBody(prompt="x").determinism == "any"
    with pytest.raises(pydantic.ValidationError, match="determinism"):
        RunBody(prompt="x", determinism="maybe")  # type: ignore[arg-type]


@pytest.mark.clause("001-§determinism.3")
def test_mcp_run_tool_offers_the_determinism_request() -> None:
    prop = RUN.inputSchema["properties"]["determinism"]
    assert prop["enum"] == ["any", "required"] and prop["default"] == "any"


@pytest.mark.clause("001-§determinism.1")
def test_http_answer_when_operations_have_receipts_carries_their_determinism() -> None:
    requested = build_request(user="ana", scene_id="s", prompt="x", host=HTTP)
    ops = convert_operation_set(
        {
            "request_id": requested.request_id,
            "operations": [
                {
                    "operation_id": i,
                    "tool_name": "test.scatter",
                    "args": {},
                    "depends_on": [],
                    "safety_level": "safe_write",
                }
                for i in ("op1", "op2")
            ],
        }
    )
    planned = follow(
        requested,
        Planned,
        1.0,
        scene_id="s",
        planner="plan",
        operation_set=ops,
        schedule=["op1", "op2"],
        catalog_version="v",
    )
    receipt = Receipt(
        operation_id="op1",
        tool_name="test.scatter",
        safety_level="safe_write",
        status="succeeded",
        determinism_class="seeded",
        seed=11,
    )
    refused = Receipt(
        operation_id="op2",
        tool_name="test.noise",
        safety_level="safe_write",
        status="failed",
        error_code="nondeterministic_refused",
        determinism_class="nondeterministic",
    )
    done = follow(
        planned,
        OperationSucceeded,
        2.0,
        operation_id="op1",
        mcp_call_id="c",
        blender_mutation_id="m",
        receipt=receipt,
    )
    result = RunResult(
        run_id=requested.run_id,
        request_id=requested.request_id,
        thread_id=requested.thread_id,
        scene_id="s",
        user="ana",
        status="executing",
        receipts=[receipt, refused],
    )
    actions = run_out(result, [requested, planned, done]).model_dump(by_alias=True)["actions"]
    assert [(a["determinismClass"], a["seed"], a["errorCode"]) for a in actions] == [
        ("seeded", 11, None),
        ("nondeterministic", None, "nondeterministic_refused"),
    ]
    result = msgspec.structs.replace(result, receipts=[])
    waiting = run_out(result, [requested, planned]).model_dump(by_alias=True)["actions"]
    assert [(a["determinismClass"], a["errorCode"]) for a in waiting] == [(None, None)] * 2


@pytest.mark.clause("001-§core-concepts.2", "001-§determinism.3")
def test_cli_run_when_determinism_is_asked_sends_it_from_the_cli_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.doors.cli.commands import run_request
    from services.doors.cli.main import parser

    args = parser().parse_args(["run", "add a cube", "--determinism", "required"])
    request = run_request(args, Settings(home=tmp_path), None)
    assert (request.host, request.determinism) == (CLI, "required")
    assert (
        run_request(parser().parse_args(["run", "x"]), Settings(home=tmp_path), None).determinism
        == "any"
    )
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["run", "x", "--determinism", "maybe"])
    assert exit_.value.code == 2 and "--determinism" in capsys.readouterr().err


@pytest.mark.clause("001-§core-concepts.2", "001-§determinism.3")
def test_http_door_when_a_body_asks_for_determinism_sends_it_from_the_http_host(
    tmp_path: Path,
) -> None:
    from services.doors.gateway.agent import _built

    gateway = cast(Any, SimpleNamespace(settings=Settings(home=tmp_path)))
    request = _built(RunBody(prompt="add a cube", determinism="required"), "ana", gateway)
    assert (request.host, request.determinism, request.user) == (HTTP, "required", "ana")


@pytest.mark.clause("001-§core-concepts.2", "001-§determinism.3")
def test_mcp_door_when_a_run_asks_for_determinism_sends_it_from_its_transports_host(
    tmp_path: Path,
) -> None:
    from services.doors.mcp.approval import run_request
    from services.doors.mcp.errors import ValidationError
    from services.doors.mcp.server import door_for

    settings = Settings(home=tmp_path)
    bus = cast(Any, SimpleNamespace(prefix="blendmesh"))
    args = {"scene_id": "s", "request": "add a cube", "determinism": "required"}
    stdio = run_request(door_for(settings, bus), "ana", args)
    over_http = run_request(door_for(settings, bus, 5.0, MCP_HTTP), "ana", args)
    assert (stdio.host, over_http.host) == (MCP_STDIO, MCP_HTTP)
    assert stdio.determinism == over_http.determinism == "required"
    with pytest.raises(ValidationError, match="scene id"):
        run_request(door_for(settings, bus), "ana", {**args, "scene_id": "a b"})
