"""The parts of the health snapshot that need no server: what a consumer's and a stream's
info become, JetStream's silences as reasons, who may ask and answer, and the gateway's
and the CLI's renderings."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from nats.aio.client import Client
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AccountInfo, ConsumerInfo, StreamInfo
from nats.js.errors import APIError, NotFoundError, ServiceUnavailableError
from rich.console import Console

from contracts.health import (
    RUN_NEEDS,
    BlenderState,
    ConsumerState,
    InstanceData,
    JetStreamStatus,
    MeshStatus,
    StatsReply,
    StreamStatus,
    assess,
    instance_of,
    service_status,
    unreachable,
)
from services.doors.cli import status as cli_status
from services.doors.gateway.health import ReadinessProbe, readiness_out
from services.runtime.nats import access
from services.runtime.nats.jetstream_state import jetstream_state, jetstream_status, stream_status
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREFIX = "bm"
LOG = "BM_EVENTS"


def consumer_info(name: str) -> ConsumerInfo:
    return ConsumerInfo.from_response(
        {
            "name": name,
            "stream_name": LOG,
            "config": {"durable_name": name},
            "created": "2026-11-24T10:00:00Z",
            "ack_floor": {
                "consumer_seq": 3,
                "stream_seq": 7,
                "last_active": "2026-11-24T10:00:01.5Z",
            },
            "num_pending": 2,
            "num_redelivered": 1,
            "num_ack_pending": 1,
        }
    )


def stream_info(name: str, cluster: dict[str, Any] | None = None) -> StreamInfo:
    doc: dict[str, Any] = {
        "config": {"name": name, "num_replicas": 3 if cluster else 1},
        "state": {"messages": 4, "bytes": 100, "first_seq": 1, "last_seq": 4, "consumer_count": 1},
    }
    if cluster is not None:
        doc["cluster"] = cluster
    return StreamInfo.from_response(doc)


def account(storage: int = 50, max_storage: int = -1) -> AccountInfo:
    return AccountInfo.from_response(
        {
            "memory": 0,
            "storage": storage,
            "streams": 1,
            "consumers": 1,
            "limits": {
                "max_memory": -1,
                "max_storage": max_storage,
                "max_streams": -1,
                "max_consumers": -1,
                "max_ack_pending": -1,
                "memory_max_stream_bytes": -1,
                "storage_max_stream_bytes": -1,
                "max_bytes_required": False,
            },
            "api": {"total": 1, "errors": 0},
        }
    )


class FakeJetStream:
    """Answers consumer, stream and account info from a table; an exception is raised."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def _answer(self, key: str) -> Any:
        found = self.answers.get(key, NotFoundError())
        if isinstance(found, BaseException):
            raise found
        return found

    async def consumer_info(self, stream: str, durable: str, timeout: float | None = None) -> Any:
        return self._answer(f"consumer {durable}")

    async def stream_info(self, name: str) -> Any:
        return self._answer(f"stream {name}")

    async def account_info(self) -> Any:
        return self._answer("account")


def fake(answers: dict[str, Any]) -> JetStreamContext:
    return cast(JetStreamContext, FakeJetStream(answers))


async def test_consumer_stats_when_read_report_each_durables_state_and_what_failed() -> None:
    js = fake({"consumer policy": consumer_info("policy"), "consumer other": NatsTimeoutError()})
    read = health.consumer_stats(js, PREFIX, ["policy", "policy-expiry", "other"])
    found = msgspec.convert(await read(), InstanceData)
    assert found.consumers == [
        ConsumerState(
            durable="policy",
            num_pending=2,
            num_ack_pending=1,
            num_redelivered=1,
            ack_floor=7,
            last_ack="2026-11-24T10:00:01.500000+00:00",
        )
    ]
    assert found.problems == [
        "its consumer policy-expiry does not exist (it is made again within seconds)",
        "its consumer other could not be read (TimeoutError)",
    ]


async def test_consumer_stats_when_the_service_knows_a_problem_add_it_unhealthy() -> None:
    js = fake({"consumer executor": consumer_info("executor")})
    refused = "its writes are refused for 4 s: JetStream's store or the disk is full. ..."
    read = health.consumer_stats(js, PREFIX, ["executor"], lambda: [refused])
    found = msgspec.convert(await read(), InstanceData)
    assert found.problems == [refused] and len(found.consumers) == 1
    reply = StatsReply(name="blendmesh-planner", id="p1", version="1", data=found)
    judged = instance_of("planner", reply)
    assert not judged.healthy and judged.problems == [refused]


def test_stream_status_when_replicas_are_offline_or_behind_names_each() -> None:
    info = stream_info(
        LOG,
        {
            "leader": "n1",
            "replicas": [
                {"name": "n2", "current": True, "offline": False, "lag": 0},
                {"name": "n3", "current": False, "offline": True},
                {"name": "n4", "current": True, "offline": False, "lag": 500},
            ],
        },
    )
    status = stream_status(info)
    assert (status.name, status.replicas, status.leader) == (LOG, 3, "n1")
    assert (status.messages, status.bytes) == (4, 100)
    assert status.problems == ["replica n3 is offline", "replica n4 is 500 operations behind"]
    assert stream_status(stream_info(LOG)).leader is None  # no cluster block: said by none


def test_jetstream_status_when_the_account_has_a_limit_says_what_is_left() -> None:
    limited = jetstream_status(account(storage=30, max_storage=100), [])
    assert (limited.storage, limited.storage_limit, limited.storage_left) == (30, 100, 70)
    unlimited = jetstream_status(account(storage=30), [])
    assert (unlimited.storage_limit, unlimited.storage_left) == (None, None)


async def test_jetstream_state_when_read_lists_only_the_mesh_streams_that_exist() -> None:
    js = fake(
        {
            "account": account(),
            f"stream {LOG}": stream_info(LOG, {"leader": "n1"}),
            "stream KV_bm_journal": ServiceUnavailableError(code=503, err_code=10008),
        }
    )
    status = await jetstream_state(js, PREFIX, wait=0.5)
    assert status.ok
    assert [(s.name, s.leader) for s in status.streams] == [
        (LOG, "n1"),
        ("KV_bm_journal", None),
    ]
    assert status.streams[1].problems == [
        "it did not answer within 0.5 s (ServiceUnavailableError)"
    ]


async def test_jetstream_state_when_jetstream_is_silent_or_refuses_says_why() -> None:
    cases: list[tuple[Exception, str]] = [
        (
            ServiceUnavailableError(),
            "JetStream does not answer: the NATS server has no JetStream, or it stopped",
        ),
        (
            ServiceUnavailableError(code=503, err_code=10008, description="no leader"),
            "JetStream is unavailable (no leader); on a cluster, start a majority of its servers",
        ),
        (
            NatsTimeoutError(),
            "JetStream did not answer within 0.5 s; on a cluster, start a majority of its servers",
        ),
        (APIError(code=500, description="boom"), "JetStream refused to describe itself (boom)"),
    ]
    for raised, said in cases:
        status = await jetstream_state(fake({"account": raised}), PREFIX, wait=0.5)
        assert status == JetStreamStatus(ok=False, error=said)


def test_permissions_when_a_role_registers_it_hears_the_services_api_and_may_answer() -> None:
    for role in (*access.SERVICE_ROLES, access.DOOR, access.GATEWAY):
        given = access.permissions(role, PREFIX)
        assert access.SERVICES_API in given["subscribe"]["allow"], role
        assert given["allow_responses"] is True, role
        assert access.SERVICES_API not in given["publish"].get("allow", []), role


def test_permissions_when_compared_no_login_both_asks_and_answers_the_services_api() -> None:
    client = access.permissions(access.CLIENT, PREFIX)
    assert access.SERVICES_API in client["publish"]["allow"]
    assert access.SERVICES_API not in client["subscribe"]["allow"]
    assert "allow_responses" not in client
    gateway = access.permissions(access.GATEWAY, PREFIX)
    assert gateway["publish"] == {"deny": [">"]}  # its answers, nothing else
    assert gateway["subscribe"] == {"allow": [access.SERVICES_API]}
    user = access.user_permissions("ana", PREFIX)
    assert all("$SRV" not in s for s in user["publish"]["allow"] + user["subscribe"]["allow"])


def _status(ready: bool) -> MeshStatus:
    executor = StatsReply(
        name="blendmesh-executor",
        id="e1",
        version="0.1.0",
        data=InstanceData(
            blender=BlenderState(up=True, version="5.0.1", scene="ana-s", revision=2)
        ),
    )
    planner = StatsReply(
        name="blendmesh-planner",
        id="p1",
        version="0.1.0",
        data=InstanceData(consumers=[ConsumerState(durable="planner", num_pending=5, ack_floor=9)]),
    )
    others = {"executor": executor, "planner": planner}
    roles = RUN_NEEDS if ready else ("planner",)
    found = {r: [others.get(r) or StatsReply(name=r, id=r, version="0.1.0")] for r in roles}
    log = StreamStatus(name=LOG, replicas=1, leader="n1", messages=3, bytes=300)
    return assess(found, JetStreamStatus(ok=True, storage=300, streams=[log]), LOG)


def test_readiness_out_when_an_executor_holds_a_scene_leaves_the_scene_out() -> None:
    body = readiness_out(_status(True)).model_dump(by_alias=True)
    executor = next(s for s in body["services"] if s["role"] == "executor")
    assert executor["instances"][0]["blender"] == {"up": True, "version": "5.0.1", "restarts": 0}
    assert "ana-s" not in json.dumps(body)
    planner = next(s for s in body["services"] if s["role"] == "planner")["instances"][0]
    assert planner["consumers"] == [
        {
            "durable": "planner",
            "numPending": 5,
            "numAckPending": 0,
            "numRedelivered": 0,
            "ackFloor": 9,
            "lastAck": None,
        }
    ]
    assert {"storageLimit", "storageLeft"} <= set(body["jetstream"])


async def test_readiness_probe_when_read_often_asks_the_mesh_once_a_period() -> None:
    asked: list[float] = []

    async def ask(nc: Client, js: JetStreamContext, prefix: str, wait: float) -> MeshStatus:
        asked.append(wait)
        return _status(True)

    bus = cast(Bus, type("B", (), {"nc": None, "js": None, "prefix": PREFIX})())
    probe = ReadinessProbe(bus, fresh_for=60.0, wait=0.25, ask=ask)
    first = await probe.current()
    assert await probe.current() is first and asked == [0.25]
    stale = ReadinessProbe(bus, fresh_for=0.0, wait=0.25, ask=ask)
    await stale.current()
    await stale.current()
    assert len(asked) == 3


def test_running_mesh_when_the_home_has_no_mesh_file_or_a_broken_one_is_none(
    tmp_path: Path,
) -> None:
    assert cli_status.running_mesh(tmp_path) is None
    (tmp_path / "mesh.json").write_text("not json")
    assert cli_status.running_mesh(tmp_path) is None
    (tmp_path / "mesh.json").write_text('["a list"]')
    assert cli_status.running_mesh(tmp_path) is None
    (tmp_path / "mesh.json").write_text('{"url": "nats://127.0.0.1:4"}')
    assert cli_status.running_mesh(tmp_path) == "nats://127.0.0.1:4"


async def test_read_status_when_no_mesh_runs_and_no_nats_url_says_to_start_one(
    tmp_path: Path,
) -> None:
    status = await cli_status.read_status(Settings(home=tmp_path, prefix=PREFIX), timeout=0.5)
    assert not status.ready
    assert status.reasons[0] == (
        f"no mesh runs on {tmp_path} and NATS_URL is not set: start one with `blendmesh up`, "
        "or set NATS_URL"
    )


def recorder() -> Console:
    return Console(record=True, width=400, file=io.StringIO())


def test_print_status_when_not_ready_leads_with_the_reasons_and_names_the_missing() -> None:
    out = recorder()
    cli_status.print_status(out, _status(False))
    text = out.export_text()
    assert text.startswith("mesh: NOT READY\n  - no policy answers: start one")
    assert "executor" in text and "MISSING" in text
    ready = recorder()
    cli_status.print_status(ready, _status(True))
    shown = ready.export_text()
    assert shown.startswith("mesh: ready\n")
    assert "JetStream: 300 bytes stored, no account limit" in shown
    assert f"{LOG}" in shown and "n1" in shown
    assert "Blender 5.0.1 up, holds ana-s r2" in shown  # the operator's own view: the scene
    down = recorder()
    cli_status.print_status(down, unreachable("cannot reach NATS at nats://x"))
    assert "JetStream: cannot reach NATS at nats://x" in down.export_text()


def test_status_when_an_executor_leaves_pinned_runs_says_why_and_stays_healthy() -> None:
    """ADR 0053: a run pinned to another catalog waits; that is no fault of this executor."""
    said = "run r1 is pinned to tool catalog v1; this executor serves v2: left for ..."
    data = InstanceData(
        blender=BlenderState(up=True, idle=False, version="5.0.1", restarts=0),
        catalog_version="v2",
        waiting=[said],
    )
    reply = StatsReply(name="blendmesh-executor", id="e1", version="1", data=data)
    judged = instance_of("executor", reply)
    assert judged.healthy and judged.problems == []
    (row,) = cli_status.service_rows(service_status("executor", [reply]))
    assert "tool catalog v2" in row["detail"] and said in row["detail"]


def test_instance_data_when_an_executor_lists_too_many_waiting_refuses_it() -> None:
    too_many = {"catalog_version": "v2", "waiting": ["x"] * 21}
    with pytest.raises(msgspec.ValidationError, match="waiting"):
        msgspec.convert(too_many, InstanceData)


def test_status_when_an_executor_has_a_pool_shows_each_bridge_and_what_it_holds() -> None:
    first = BlenderState(up=True, version="5.0.1", scene="ana-s", revision=2)
    spare = BlenderState(up=False, idle=True, version="5.0.1")
    data = InstanceData(blender=first, bridges=[first, spare], catalog_version="v2")
    reply = StatsReply(name="blendmesh-executor", id="e1", version="1", data=data)
    (row,) = cli_status.service_rows(service_status("executor", [reply]))
    assert "Blender 1/2 5.0.1 up, holds ana-s r2" in row["detail"]
    assert "Blender 2/2 5.0.1 idle (stopped, starts with the next run)" in row["detail"]


def test_status_when_a_pool_has_spares_alike_shows_them_as_one_entry() -> None:
    up = BlenderState(up=True, version="5.0.1", scene="ana-s", revision=2)
    spare = BlenderState(up=False, idle=True, version="5.0.1")
    down = BlenderState(up=False, idle=False, version="5.0.1")
    bridges = [up, spare, spare, down, spare, spare, spare, up]
    data = InstanceData(blender=up, bridges=bridges, catalog_version="v2")
    reply = StatsReply(name="blendmesh-executor", id="e1", version="1", data=data)
    (row,) = cli_status.service_rows(service_status("executor", [reply]))
    blenders = [part for part in row["detail"].split("; ") if part.startswith("Blender")]
    assert blenders == [
        "Blender 1/8 5.0.1 up, holds ana-s r2",
        "Blender 2-3/8 5.0.1 idle (stopped, starts with the next run)",
        "Blender 4/8 5.0.1 DOWN",
        "Blender 5-7/8 5.0.1 idle (stopped, starts with the next run)",
        "Blender 8/8 5.0.1 up, holds ana-s r2",
    ]


def test_status_when_the_executor_has_one_blender_numbers_none() -> None:
    one = BlenderState(up=True, version="5.0.1")
    data = InstanceData(blender=one, bridges=[one], catalog_version="v2")
    reply = StatsReply(name="blendmesh-executor", id="e1", version="1", data=data)
    (row,) = cli_status.service_rows(service_status("executor", [reply]))
    assert row["detail"].startswith("Blender 5.0.1 up; ")
