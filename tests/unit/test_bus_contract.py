"""The published bus contract: the AsyncAPI document and per-event schemas say what the
mesh really sends and enforces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from contracts import asyncapi
from contracts.audit import AuditRecorded
from contracts.events import encode_event, event_kind
from contracts.schema_gen import SCHEMA_DIR
from services.runtime import access
from tests.unit.test_audit_projections import load_history

DOCS = Path(__file__).parents[2] / "docs"


def schema_of(type_tag: str) -> Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / "events" / f"{type_tag}.v1.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_run_publishers_when_compared_with_server_permissions_are_the_same() -> None:
    enforced: dict[str, tuple[str, ...]] = {}
    for role, kinds in access._RUN_EVENTS.items():  # the table the server is given
        for kind in kinds:
            enforced[kind] = (*enforced.get(kind, ()), role)
    assert enforced == asyncapi.RUN_PUBLISHERS


def test_signed_channels_when_compared_with_server_permissions_are_the_externals() -> None:
    external = access.permissions(access.EXTERNAL, "bm")["publish"]["allow"]
    sent = [a for a in external if not a.startswith("$")]
    assert sent == [f"bm.signed.*.{kind}" for kind in asyncapi.SIGNED]
    document = asyncapi.asyncapi_document()
    for kind in asyncapi.SIGNED:
        assert document["channels"][f"signed.{kind}"]["address"].endswith(
            f".signed.{{run_id}}.{kind}"
        )
        assert f"send signed.{kind}" in document["operations"]


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
    signed = {f"signed.{kind}" for kind in asyncapi.SIGNED}
    assert set(doc["channels"]) == tags | signed
    assert {op.split(" ", 1)[1] for op in doc["operations"]} == tags | signed
    sends = {name for name, op in doc["operations"].items() if op["action"] == "send"}
    assert sends == {"send run.requested", "send run.approval_resolved"} | {
        f"send {name}" for name in signed
    }
    for channel in doc["channels"].values():
        (ref,) = channel["messages"].values()
        message = doc["components"]["messages"][ref["$ref"].rsplit("/", 1)[1]]
        assert message["payload"]["$ref"].rsplit("/", 1)[1] in doc["components"]["schemas"]
        for name in channel["parameters"]:
            assert f"{{{name}}}" in channel["address"]
    assert doc["components"]["schemas"]["Headers"]["required"] == ["Nats-Msg-Id"]
    assert doc["components"]["schemas"]["SignedHeaders"]["required"] == [
        "Nats-Msg-Id",
        "Blendmesh-Signer",
        "Blendmesh-Signature",
    ]


@pytest.mark.parametrize("type_tag", sorted(asyncapi.tag(k) for k in asyncapi.EVENT_TYPES))
def test_bus_doc_when_read_names_every_event(type_tag: str) -> None:
    assert f"`{type_tag}`" in (DOCS / "bus.md").read_text()
