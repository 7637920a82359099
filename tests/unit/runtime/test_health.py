"""The mesh's health judged from what its services say: readiness, each role, JetStream."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from contracts.health import (
    ROLES,
    RUN_NEEDS,
    BlenderState,
    ConsumerState,
    InstanceData,
    JetStreamStatus,
    StatsReply,
    StreamStatus,
    assess,
    jetstream_problems,
    unreachable,
)
from contracts.limits import MAX_BRIDGES
from services.runtime.nats import access

LOG = "BM_EVENTS"
UP = BlenderState(up=True, version="5.0.1", scene="demo", revision=3)


def reply(role: str, ident: str = "i1", **data: object) -> StatsReply:
    if role == "executor" and "blender" not in data:
        data["blender"] = UP
    return StatsReply(
        name=f"blendmesh-{role}",
        id=ident,
        version="0.1.0",
        metadata={"role": role, "prefix": "bm"},
        data=InstanceData(**data),  # type: ignore[arg-type]
    )


def jetstream(*streams: StreamStatus, **fields: object) -> JetStreamStatus:
    log = StreamStatus(name=LOG, replicas=1, leader="n1")
    return JetStreamStatus(ok=True, streams=list(streams) or [log], **fields)  # type: ignore[arg-type]


def full(*roles: str) -> dict[str, Sequence[StatsReply]]:
    return {role: [reply(role)] for role in roles}


def test_assess_when_every_role_a_run_needs_answers_is_ready() -> None:
    status = assess(full(*RUN_NEEDS), jetstream(), LOG)
    assert status.ready and status.reasons == []
    assert [s.role for s in status.services] == list(ROLES)
    needed = {s.role: s for s in status.services if s.needed}
    assert set(needed) == set(RUN_NEEDS) and all(s.healthy for s in needed.values())
    optional = {s.role: s for s in status.services if not s.needed}
    assert set(optional) == {"door", "gateway"} and not optional["gateway"].instances


def test_assess_when_the_executor_is_missing_is_not_ready_naming_it_and_what_to_start() -> None:
    status = assess(full("planner", "policy", "guardians", "audit", "door"), jetstream(), LOG)
    assert not status.ready
    assert status.reasons == [
        "no executor answers: start one (`python -m services.executor`, the Procfile's "
        "executor line), or the whole mesh with `blendmesh up`"
    ]
    executor = next(s for s in status.services if s.role == "executor")
    assert not executor.healthy and executor.instances == [] and executor.needed


def test_assess_when_an_optional_door_is_missing_stays_ready() -> None:
    status = assess(full(*RUN_NEEDS), jetstream(), LOG)
    door = next(s for s in status.services if s.role == "door")
    assert status.ready and not door.healthy and door.problem is not None


def test_instance_when_the_executors_blender_is_down_is_unhealthy_and_the_mesh_not_ready() -> None:
    found = full("planner", "policy", "guardians", "audit")
    found["executor"] = [reply("executor", blender=BlenderState(up=False, version="5.0.1"))]
    status = assess(found, jetstream(), LOG)
    executor = next(s for s in status.services if s.role == "executor")
    assert not executor.instances[0].healthy
    assert status.reasons == [
        "no executor is healthy: its Blender is not running (it starts it again for the next run)"
    ]


def test_instance_when_the_executors_blender_idles_stopped_on_purpose_is_healthy() -> None:
    found = full("planner", "policy", "guardians", "audit")
    idle = BlenderState(up=False, idle=True, version="5.0.1")
    found["executor"] = [reply("executor", blender=idle)]
    status = assess(found, jetstream(), LOG)
    executor = next(s for s in status.services if s.role == "executor")
    assert executor.instances[0].healthy and executor.instances[0].problems == []
    assert status.ready and status.reasons == []


def test_instance_when_an_executor_does_not_report_its_blender_is_unhealthy() -> None:
    found = full("planner", "policy", "guardians", "audit")
    found["executor"] = [reply("executor", blender=None)]
    status = assess(found, jetstream(), LOG)
    assert not status.ready
    assert "does not say whether its Blender runs" in status.reasons[0]


def test_assess_when_one_of_two_executors_is_unhealthy_is_ready_and_shows_both() -> None:
    found = full("planner", "policy", "guardians", "audit")
    sick = reply("executor", "b", blender=BlenderState(up=False))
    found["executor"] = [sick, reply("executor", "a")]
    status = assess(found, jetstream(), LOG)
    executor = next(s for s in status.services if s.role == "executor")
    assert status.ready and executor.healthy
    assert [(i.id, i.healthy) for i in executor.instances] == [("a", True), ("b", False)]


def test_instance_when_it_reports_a_problem_is_unhealthy_with_that_problem() -> None:
    found = full("policy", "executor", "guardians", "audit")
    found["planner"] = [reply("planner", problems=["its consumer planner does not exist"])]
    status = assess(found, jetstream(), LOG)
    assert status.reasons == ["no planner is healthy: its consumer planner does not exist"]


def test_jetstream_problems_when_jetstream_is_silent_name_its_error_and_the_mesh_not_ready() -> (
    None
):
    silent = JetStreamStatus(ok=False, error="JetStream does not answer")
    assert jetstream_problems(silent, LOG) == ["JetStream does not answer"]
    assert not assess(full(*RUN_NEEDS), silent, LOG).ready


def test_jetstream_problems_when_the_event_log_is_missing_say_to_start_the_mesh() -> None:
    other = StreamStatus(name="KV_bm_journal", replicas=1, leader="n1")
    [problem] = jetstream_problems(jetstream(other), LOG)
    assert problem.startswith(f"the event log {LOG} does not exist") and "blendmesh up" in problem


def test_jetstream_problems_when_a_stream_has_no_leader_name_it_and_why() -> None:
    log = StreamStatus(name=LOG, replicas=3, leader=None, problems=["replica n2 is offline"])
    assert jetstream_problems(jetstream(log), LOG) == [
        f"stream {LOG} has no leader (replica n2 is offline): start a majority of the "
        "cluster's servers"
    ]


def test_jetstream_problems_when_the_accounts_storage_is_full_say_so() -> None:
    full_store = jetstream(storage=10, storage_limit=10, storage_left=0)
    assert jetstream_problems(full_store, LOG) == [
        "the account's JetStream storage is full: raise its limit"
    ]
    assert jetstream_problems(jetstream(storage=1, storage_limit=10, storage_left=9), LOG) == []


def test_unreachable_when_nats_is_down_is_not_ready_with_the_reason_first() -> None:
    status = unreachable("cannot reach NATS at nats://x")
    assert not status.ready and not status.jetstream.ok
    assert status.reasons[0] == "cannot reach NATS at nats://x"
    missing = [r for r in status.reasons[1:] if r.startswith("no ")]
    assert len(missing) == len(RUN_NEEDS)


def test_stats_reply_when_a_newer_service_adds_fields_still_decodes() -> None:
    raw = {
        "type": "io.nats.micro.v1.stats_response",
        "name": "blendmesh-planner",
        "id": "x",
        "version": "0.2.0",
        "started": "2026-11-24T10:00:00.000Z",
        "endpoints": [],
        "metadata": {"role": "planner", "prefix": "bm"},
        "data": {"consumers": [{"durable": "planner", "num_pending": 4, "later": 1}], "new": 2},
    }
    decoded = msgspec.json.decode(msgspec.json.encode(raw), type=StatsReply)
    assert decoded.data.consumers == [ConsumerState(durable="planner", num_pending=4)]
    bare = dict(raw)
    del bare["data"]
    assert msgspec.json.decode(msgspec.json.encode(bare), type=StatsReply).data == InstanceData()


def test_run_needs_when_compared_with_the_roles_are_the_service_roles() -> None:
    assert set(RUN_NEEDS) == set(access.SERVICE_ROLES)
    assert set(ROLES) == set(access.ROLES) - {access.ADMIN, access.CLIENT}


def test_instance_when_a_spare_bridge_idles_is_healthy_and_shows_every_bridge() -> None:
    found = full("planner", "policy", "guardians", "audit")
    spare = BlenderState(up=False, idle=True, version="5.0.1")
    found["executor"] = [reply("executor", bridges=[UP, spare])]
    status = assess(found, jetstream(), LOG)
    executor = next(s for s in status.services if s.role == "executor")
    assert executor.instances[0].healthy
    assert executor.instances[0].bridges == [UP, spare]


def test_instance_when_a_spare_bridge_is_down_names_it_and_is_unhealthy() -> None:
    found = full("planner", "policy", "guardians", "audit")
    down = BlenderState(up=False, version="5.0.1")
    found["executor"] = [reply("executor", bridges=[UP, UP, down])]
    status = assess(found, jetstream(), LOG)
    instance = next(s for s in status.services if s.role == "executor").instances[0]
    assert not instance.healthy
    assert instance.problems == [
        "its Blender 3 of 3 is not running (it starts it again for the next run)"
    ]


def test_stats_reply_when_an_executor_claims_more_bridges_than_the_limit_is_refused() -> None:
    many = msgspec.json.encode(reply("executor", bridges=[UP] * (MAX_BRIDGES + 1)))
    with pytest.raises(msgspec.ValidationError, match="bridges"):
        msgspec.json.decode(many, type=StatsReply)
