"""The published bus contract: the AsyncAPI document and per-event schemas say what the
mesh really sends and enforces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from contracts import asyncapi, door, event_kinds
from contracts.audit import AuditRecorded
from contracts.events import encode_event, event_kind
from contracts.schema_gen import SCHEMA_DIR
from services.runtime.nats import access
from tests.unit.audit.test_audit_projections import load_history

DOCS = Path(__file__).parents[3] / "docs"


def schema_of(type_tag: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / "events" / f"{type_tag}.v1.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_run_publishers_when_compared_with_server_permissions_are_the_same() -> None:
    """What the AsyncAPI document says against what the server is given, read back from
    each role's rendered permissions rather than from the table both derive from."""
    enforced: dict[str, tuple[str, ...]] = {}
    for role in access._RUN_EVENTS:
        allow = access.permissions(role, "bm")["publish"]["allow"]
        for subject in allow:
            if subject.startswith("bm.run.*.") and subject != "bm.run.*.>":
                kind = subject.removeprefix("bm.run.*.")
                enforced[kind] = (*enforced.get(kind, ()), role)
    assert enforced == asyncapi.RUN_PUBLISHERS


def test_event_kinds_when_the_union_grows_hold_a_row_for_every_run_event_once() -> None:
    rows = [kind.event for kind in event_kinds.RUN_EVENT_KINDS]
    assert sorted(t.__name__ for t in rows) == sorted(
        t.__name__ for t in event_kinds.run_event_types()
    )
    assert len(set(rows)) == len(rows)
    assert all(kind.publishers for kind in event_kinds.RUN_EVENT_KINDS)
    roles = set(access.ROLES)
    assert {p for kind in event_kinds.RUN_EVENT_KINDS for p in kind.publishers} <= roles


def test_event_kinds_when_asked_by_doors_are_the_requests_people_make() -> None:
    assert event_kinds.asked() == (
        "requested",
        "approval_resolved",
        "cancel_requested",
        "render_requested",
        "render_cancel_requested",
    )
    assert event_kinds.asked() == asyncapi.CLIENT_SENDS


def test_door_channels_when_compared_with_a_users_permissions_are_what_it_may_send() -> None:
    allowed = access.user_permissions("ana", "bm")
    assert allowed["publish"]["allow"] == ["bm.api.ana.>"]
    document = asyncapi.asyncapi_document()
    for verb in asyncapi.DOOR_VERBS:
        address = document["channels"][f"door.{verb}"]["address"]
        assert address == f"{{prefix}}.api.{{user}}.{verb}"
        assert f"send door.{verb}" in document["operations"]
    assert set(asyncapi.DOOR_VERBS) == set(door.VERBS)
    feed = document["channels"]["feed"]["address"].replace("{prefix}", "bm")
    assert feed.replace("{user}", "ana").startswith("bm.feed.ana.")
    assert allowed["subscribe"]["allow"] == ["_INBOX.u.ana.>", "bm.feed.ana.>"]


def test_event_schemas_when_given_recorded_events_accept_each() -> None:
    for event in load_history():
        data = json.loads(encode_event(event))
        assert not list(schema_of(event_kind(event)).iter_errors(data)), event_kind(event)


def test_event_schema_when_a_field_has_the_wrong_type_rejects_it_naming_the_field() -> None:
    event = next(e for e in load_history() if event_kind(e) == "run.requested")
    data: dict[str, Any] = json.loads(encode_event(event))
    data["scene_id"] = 42
    errors = list(schema_of("run.requested").iter_errors(data))
    assert [list(e.path) for e in errors] == [["scene_id"]]
    data = json.loads(encode_event(event)) | {"surprise": True}
    assert list(schema_of("run.requested").iter_errors(data))  # no unknown fields


def test_audit_record_schema_when_given_a_published_record_accepts_it() -> None:
    record = AuditRecorded(
        stream_seq=3,
        event_id="e-1",
        run_id="run-1",
        user="ana",
        timestamp=1.5,
        request_id="req-1",
        operation_id="op-1",
        mcp_call_id="mcp-1",
        blender_mutation_id=None,
        tool_name="scene.inspect",
        safety_level="read_only",
        status="succeeded",
        scene_hash_before="h0",
        scene_hash_after="h0",
        scene_id="shot",
        decision="allow",
    )
    data = json.loads(msgspec.json.encode(record))
    assert data["type"] == "audit.recorded"
    assert not list(schema_of("audit.recorded").iter_errors(data))


def test_asyncapi_when_generated_has_a_channel_message_and_receive_per_event() -> None:
    doc = json.loads((SCHEMA_DIR / "asyncapi.json").read_text())
    assert doc["asyncapi"] == "3.0.0"
    tags = {asyncapi.tag(kind) for kind in asyncapi.EVENT_TYPES}
    doors = {f"door.{verb}" for verb in asyncapi.DOOR_VERBS}
    assert set(doc["channels"]) == tags | doors | {"feed"}
    assert {op.split(" ", 1)[1] for op in doc["operations"]} == tags | doors | {"feed"}
    sends = {name for name, op in doc["operations"].items() if op["action"] == "send"}
    assert sends == {
        "send run.requested",
        "send run.approval_resolved",
        "send run.cancel_requested",
        "send run.render_requested",
        "send run.render_cancel_requested",
    } | {f"send {name}" for name in doors}
    for channel in doc["channels"].values():
        for ref in channel["messages"].values():
            message = doc["components"]["messages"][ref["$ref"].rsplit("/", 1)[1]]
            assert message["payload"]["$ref"].rsplit("/", 1)[1] in doc["components"]["schemas"]
        for name in channel["parameters"]:
            assert f"{{{name}}}" in channel["address"]
    assert doc["components"]["schemas"]["Headers"]["required"] == ["Nats-Msg-Id"]
    assert "DoorReply" in doc["components"]["messages"]


@pytest.mark.parametrize("type_tag", sorted(asyncapi.tag(k) for k in asyncapi.EVENT_TYPES))
def test_bus_doc_when_read_names_every_event(type_tag: str) -> None:
    assert f"`{type_tag}`" in (DOCS / "bus.md").read_text()
