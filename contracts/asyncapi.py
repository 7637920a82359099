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

from contracts import event_kinds
from contracts.audit import AuditRecorded
from contracts.door import (
    ChangesQuery,
    DoorReply,
    FileRef,
    FileUpload,
    ListQuery,
    ReviewAsk,
    RunRef,
)
from contracts.events import (
    AnyEvent,
    ApprovalResolved,
    CancelRequested,
    DeadLettered,
    RunEvent,
    RunRequested,
    ThreadMessage,
)

VERSION = "1.0.0"
EVENT_TYPES: tuple[type[msgspec.Struct], ...] = (*typing.get_args(AnyEvent), AuditRecorded)

# Which NATS roles may publish each run event, and what a door sends: both from the one
# table of run event kinds, which the server's permissions read too.
RUN_PUBLISHERS: dict[str, tuple[str, ...]] = event_kinds.publishers()
# What a user's own login asks the bus door (contracts/door.py): verb -> request body.
DOOR_VERBS: dict[str, type[msgspec.Struct]] = {
    "run.submit": RunRequested,
    "run.resolve": ApprovalResolved,
    "run.cancel": CancelRequested,
    "run.events": RunRef,
    "run.audit": RunRef,
    "runs.list": ListQuery,
    "scenes.list": ListQuery,
    "scenes.changes": ChangesQuery,
    "scenes.review": ReviewAsk,
    "files.stage": FileUpload,
    "files.get": FileRef,
}
CLIENT_SENDS = event_kinds.asked()

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
    elif (scene := event_kinds.scene_event_kind(kind)) is not None:
        address = f"{{prefix}}.scene.{{scene_id}}.{scene.token}"
        params = ("prefix", "scene_id")
        who = " or ".join(f"NATS role `{role}`" for role in scene.publishers)
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


def _door_channel(verb: str) -> tuple[str, dict[str, Any]]:
    body = DOOR_VERBS[verb].__name__
    return f"door.{verb}", {
        "address": f"{{prefix}}.api.{{user}}.{verb}",
        "description": "Core NATS request/reply, no stream. Published only by the login of "
        "`user` (its NKey); the bus door answers a DoorReply into the asker's inbox "
        "(`_INBOX.u.{user}`), about that user's own data alone (docs/bus.md §4).",
        "parameters": {p: {"description": _PARAMETERS[p]} for p in ("prefix", "user")},
        "messages": {
            f"Door{body}": {"$ref": f"#/components/messages/Door{body}"},
        },
    }


def _door_operations() -> dict[str, Any]:
    return {
        f"send door.{verb}": {
            "action": "send",
            "channel": {"$ref": f"#/channels/door.{verb}"},
            "messages": [{"$ref": f"#/channels/door.{verb}/messages/Door{body.__name__}"}],
            "reply": {
                "address": {"location": "$message.header#/reply"},
                "messages": [{"$ref": "#/components/messages/DoorReply"}],
            },
        }
        for verb, body in DOOR_VERBS.items()
    }


def _door_message(kind: type[msgspec.Struct]) -> dict[str, Any]:
    return {
        "name": kind.__name__,
        "title": kind.__name__,
        "summary": (kind.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
        "contentType": "application/json",
        "payload": {"$ref": f"#/components/schemas/{kind.__name__}"},
    }


def _feed_channel() -> dict[str, Any]:
    return {
        "address": "{prefix}.feed.{user}.run.{run_id}.{event}",
        "description": "Core NATS, no stream. The bus door passes on every event of the "
        "user's runs, as the log holds it; only that user's login may subscribe. Subscribe "
        "first, then ask `run.events` for what came before, and drop repeated event ids.",
        "parameters": {
            **{p: {"description": _PARAMETERS[p]} for p in ("prefix", "user", "run_id")},
            "event": {"description": "The event's kind: `requested`, `planned`, ..."},
        },
        "messages": {
            kind.__name__: {"$ref": f"#/components/messages/{kind.__name__}"}
            for kind in EVENT_TYPES
            if issubclass(kind, RunEvent)
        },
    }


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
        (*EVENT_TYPES, RunRef, ListQuery, ChangesQuery, ReviewAsk, FileUpload, FileRef, DoorReply),
        ref_template="#/components/schemas/{name}",
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
            **dict(_door_channel(verb) for verb in DOOR_VERBS),
            "feed": _feed_channel(),
        },
        "operations": {
            **_operations(),
            **_door_operations(),
            "receive feed": {
                "action": "receive",
                "channel": {"$ref": "#/channels/feed"},
            },
        },
        "components": {
            "schemas": {"Headers": HEADERS, **schemas},
            "messages": {
                **{kind.__name__: _message(kind) for kind in EVENT_TYPES},
                **{
                    f"Door{body.__name__}": _door_message(body)
                    for body in dict.fromkeys(DOOR_VERBS.values())
                },
                "DoorReply": _door_message(DoorReply),
            },
        },
    }


def generated() -> dict[str, Any]:
    """File name (under contracts/schemas/) -> builder, for ``schema_gen``."""
    out: dict[str, Any] = {"asyncapi.json": asyncapi_document}
    for kind in EVENT_TYPES:
        out[_file(kind)] = lambda kind=kind: event_schema(kind)
    return out
