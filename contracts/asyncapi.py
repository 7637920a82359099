"""The bus as a published contract: an AsyncAPI 3 document and one JSON Schema per event.

Both are generated from the event types by ``python -m contracts.schema_gen`` (whose
``--check`` CI runs), so a client in any language reads the wire format from
``contracts/schemas/`` instead of from our source. docs/bus.md explains what the
document describes: subjects, who publishes what, headers, ordering and idempotency.
"""

from __future__ import annotations

import typing
from typing import Any

import msgspec

from contracts.audit import AuditRecorded
from contracts.events import (
    AnyEvent,
    ApprovalResolved,
    DeadLettered,
    RunEvent,
    RunRequested,
    ThreadMessage,
)

VERSION = "1.0.0"
EVENT_TYPES: tuple[type[msgspec.Struct], ...] = (*typing.get_args(AnyEvent), AuditRecorded)

# Which NATS roles may publish each run event (the server enforces it:
# services/runtime/access.py; a test keeps the two tables equal). The planner and the
# policy pass on the signed requests and resolutions they checked (docs/adr/0010).
RUN_PUBLISHERS: dict[str, tuple[str, ...]] = {
    "requested": ("client", "planner"),
    "approval_resolved": ("client", "policy"),
    "planned": ("planner",),
    "plan_rejected": ("planner",),
    "completed": ("planner",),
    "failed": ("planner",),
    "policy_decided": ("policy",),
    "approval_requested": ("policy",),
    "approved": ("policy",),
    "denied": ("policy",),
    "op_started": ("executor",),
    "op_succeeded": ("executor",),
    "op_failed": ("executor",),
    "op_rolled_back": ("executor",),
    "op_skipped": ("executor",),
    "executed": ("executor",),
    "gates_evaluated": ("guardians",),
}
# What a program outside the mesh sends, signed, as the ``external`` role, and who checks.
SIGNED: dict[str, tuple[type[RunEvent], str]] = {
    "requested": (RunRequested, "planner"),
    "approval_resolved": (ApprovalResolved, "policy"),
}
CLIENT_SENDS = ("requested", "approval_resolved")

_PARAMETERS = {
    "prefix": "BLENDMESH_PREFIX of the mesh (default `blendmesh`).",
    "run_id": "The run's id: 1-128 letters, digits, `_` or `-`.",
    "thread_id": "The conversation thread's id.",
    "consumer": "The durable consumer that gave up on a message.",
    "user": "The user the record is about (a non-token user id: `=` and 32 hex of its sha256).",
    "scene_id": "The run's scene (`=` while the run has none).",
}
HEADERS = {
    "type": "object",
    "properties": {
        "Nats-Msg-Id": {
            "type": "string",
            "description": "Required. The event's `event_id` (an audit record: "
            "`audit-<event_id>`): the stream drops a second message with the same id "
            "within its duplicate window, so publishing again after a lost ack is safe.",
        },
        "traceparent": {
            "type": "string",
            "description": "Optional W3C trace context; every service's span of the run "
            "joins this trace.",
        },
    },
    "required": ["Nats-Msg-Id"],
}
SIGNED_HEADERS = {
    "type": "object",
    "properties": {
        "Nats-Msg-Id": {
            "type": "string",
            "description": "Required. A fresh random id for every message (a uuid4): the "
            "stream drops a second message with the same id within its duplicate window.",
        },
        "Blendmesh-Signer": {
            "type": "string",
            "pattern": "^U[A-Z2-7]{55}$",
            "description": "Required. The signer's public user NKey, registered for the "
            "user the message names (`blendmesh users add NAME --key U...`).",
        },
        "Blendmesh-Signature": {
            "type": "string",
            "pattern": "^[A-Za-z0-9_-]{86}={0,2}$",
            "description": "Required. base64url of the ed25519 signature, by the user's "
            "NKey, of the subject, a newline (0x0A) and the body, byte for byte.",
        },
        "traceparent": HEADERS["properties"]["traceparent"],  # type: ignore[index]
    },
    "required": ["Nats-Msg-Id", "Blendmesh-Signer", "Blendmesh-Signature"],
}


def tag(kind: type[msgspec.Struct]) -> str:
    return str(kind.__struct_config__.tag)


def _file(kind: type[msgspec.Struct]) -> str:
    return f"events/{tag(kind)}.v1.json"


def event_schema(kind: type[msgspec.Struct]) -> dict[str, Any]:
    """One event's JSON Schema, self-contained (its nested types in ``$defs``)."""
    _, defs = msgspec.json.schema_components([kind], ref_template="#/$defs/{name}")
    root = defs.pop(kind.__name__)
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://blendmesh.dev/schemas/{_file(kind)}",
        **root,
    }
    if defs:
        out["$defs"] = defs
    return out


def _channel(kind: type[msgspec.Struct]) -> tuple[str, dict[str, Any]]:
    name = tag(kind)
    params: tuple[str, ...]
    if issubclass(kind, RunEvent):
        event = name.removeprefix("run.")
        address, params = f"{{prefix}}.run.{{run_id}}.{event}", ("prefix", "run_id")
        who = " or ".join(f"NATS role `{role}`" for role in RUN_PUBLISHERS[event])
    elif kind is ThreadMessage:
        address, params = "{prefix}.thread.{thread_id}.message", ("prefix", "thread_id")
        who = "NATS role `planner`"
    elif kind is DeadLettered:
        address, params = "{prefix}.deadletter.{consumer}", ("prefix", "consumer")
        who = "any service's consumer loop"
    else:
        address = "{prefix}.audit.{user}.{scene_id}.{run_id}"
        params = ("prefix", "user", "scene_id", "run_id")
        who = "NATS role `audit`"
    stream = "<PREFIX>_AUDIT" if kind is AuditRecorded else "<PREFIX>_EVENTS"
    return name, {
        "address": address,
        "description": f"Stream {stream}. Published only by {who}.",
        "parameters": {p: {"description": _PARAMETERS[p]} for p in params},
        "messages": {kind.__name__: {"$ref": f"#/components/messages/{kind.__name__}"}},
    }


def _message(kind: type[msgspec.Struct], headers: str = "Headers") -> dict[str, Any]:
    return {
        "name": tag(kind),
        "title": kind.__name__,
        "summary": (kind.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
        "contentType": "application/json",
        "headers": {"$ref": f"#/components/schemas/{headers}"},
        "payload": {"$ref": f"#/components/schemas/{kind.__name__}"},
        "externalDocs": {"url": f"https://blendmesh.dev/schemas/{_file(kind)}"},
    }


def _signed_channel(kind: str) -> tuple[str, dict[str, Any]]:
    event, checker = SIGNED[kind]
    message = f"Signed{event.__name__}"
    return f"signed.{kind}", {
        "address": f"{{prefix}}.signed.{{run_id}}.{kind}",
        "description": "Stream <PREFIX>_EVENTS. Published only by NATS role `external`: "
        f"a program outside the mesh, signing for its user. The {checker} checks the "
        f"signature and passes the message on to `{{prefix}}.run.{{run_id}}.{kind}`; a "
        "refused request ends its run failed, a refused resolution changes nothing.",
        "parameters": {p: {"description": _PARAMETERS[p]} for p in ("prefix", "run_id")},
        "messages": {message: {"$ref": f"#/components/messages/{message}"}},
    }


def _signed_operations() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, (event, _) in SIGNED.items():
        message = f"Signed{event.__name__}"
        out[f"send signed.{kind}"] = {
            "action": "send",
            "channel": {"$ref": f"#/channels/signed.{kind}"},
            "messages": [{"$ref": f"#/channels/signed.{kind}/messages/{message}"}],
        }
    return out


def _operations() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in EVENT_TYPES:
        name = tag(kind)
        ref = {"$ref": f"#/channels/{name}"}
        message = {"$ref": f"#/channels/{name}/messages/{kind.__name__}"}
        if issubclass(kind, RunEvent) and name.removeprefix("run.") in CLIENT_SENDS:
            out[f"send {name}"] = {"action": "send", "channel": ref, "messages": [message]}
        out[f"receive {name}"] = {"action": "receive", "channel": ref, "messages": [message]}
    return out


def asyncapi_document() -> dict[str, Any]:
    """The AsyncAPI 3.0 document of the bus, from a client's point of view: what it may
    send (run requests, approval resolutions) and every event it may receive."""
    _, schemas = msgspec.json.schema_components(
        EVENT_TYPES, ref_template="#/components/schemas/{name}"
    )
    return {
        "asyncapi": "3.0.0",
        "id": "urn:blendmesh:bus",
        "info": {
            "title": "blendmesh bus",
            "version": VERSION,
            "description": "Run requests, run events and audit records on NATS JetStream. "
            "The contract in prose: docs/bus.md.",
        },
        "defaultContentType": "application/json",
        "servers": {
            "mesh": {
                "host": "127.0.0.1:4222",
                "protocol": "nats",
                "description": "The mesh's nats-server (NATS_URL), JetStream enabled, one "
                "NATS user per role.",
            }
        },
        "channels": {
            **dict(_channel(kind) for kind in EVENT_TYPES),
            **dict(_signed_channel(kind) for kind in SIGNED),
        },
        "operations": {**_operations(), **_signed_operations()},
        "components": {
            "schemas": {"Headers": HEADERS, "SignedHeaders": SIGNED_HEADERS, **schemas},
            "messages": {
                **{kind.__name__: _message(kind) for kind in EVENT_TYPES},
                **{
                    f"Signed{event.__name__}": _message(event, "SignedHeaders")
                    for event, _ in SIGNED.values()
                },
            },
        },
    }


def generated() -> dict[str, Any]:
    """File name (under contracts/schemas/) -> builder, for ``schema_gen``."""
    out: dict[str, Any] = {"asyncapi.json": asyncapi_document}
    for kind in EVENT_TYPES:
        out[_file(kind)] = lambda kind=kind: event_schema(kind)
    return out
