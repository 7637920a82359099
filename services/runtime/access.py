"""Who may write what on the bus: one NATS user per service role (docs/architecture.md).

The server blendmesh starts knows these users and refuses anonymous clients. Each role
may publish only the events it owns (only policy writes ``approved``, only the executor
writes ``op_*``, a client writes ``requested`` and ``approval_resolved``), only into the
KV buckets and object stores it owns. A program outside the mesh logs in as ``external``
and may only send signed requests and resolutions, which the planner and the policy check
before they enter a run (docs/adr/0010-bus-identity-signed-requests.md). Of the JetStream
API a role gets the reads, named consumers to read through and its own durable
consumers; only admin creates, changes or deletes a stream
(docs/adr/0007-jetstream-api-least-privilege.md). Reads stay open to every role: the log
is the shared record.

Passwords are random per home and kept in a file only its owner can read
(docs/adr/0006-nats-users-per-service.md).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts import subjects

ADMIN = "admin"  # creates the streams (log, buckets, stores) before the services start
CLIENT = "client"  # the doors (CLI, gateway, MCP): they authenticate people themselves
EXTERNAL = "external"  # programs outside the mesh: signed requests only (ADR 0010)
SERVICE_ROLES = ("planner", "policy", "executor", "guardians", "audit")
ROLES = (ADMIN, CLIENT, EXTERNAL, *SERVICE_ROLES)

# Run events each role may append (the subject's last token).
_RUN_EVENTS: dict[str, tuple[str, ...]] = {
    CLIENT: ("requested", "approval_resolved"),
    EXTERNAL: (),  # its signed messages enter a run only through the checks below
    # The planner passes on a signed request it checked, the policy a signed resolution.
    "planner": ("requested", "planned", "plan_rejected", "completed", "failed"),
    "policy": ("approval_resolved", "policy_decided", "approval_requested", "approved", "denied"),
    "executor": (
        "op_started",
        "op_succeeded",
        "op_failed",
        "op_rolled_back",
        "op_skipped",
        "executed",
    ),
    "guardians": ("gates_evaluated",),
    "audit": (),
}
_KV_BUCKETS: dict[str, tuple[str, ...]] = {
    "policy": ("allowlist",),
    "executor": ("journal", "leases", "scene_heads", "scene_summaries", "catalog"),
}
# The doors stage the .blend files of imports in ``uploads``; the executor loads them.
_OBJECT_STORES: dict[str, tuple[str, ...]] = {
    "executor": ("scenes", "previews", "uploads"),
    CLIENT: ("uploads",),
}
# Seconds an object store keeps an object; the others keep theirs for ever. An upload
# outlives any pending approval of its import (BLENDMESH_APPROVAL_TTL, 1 h by default).
_STORE_TTL: dict[str, float] = {"uploads": 24 * 3600.0}
# Every bucket and store: the admin creates them all before the services start.
KV_BUCKETS = tuple(name for names in _KV_BUCKETS.values() for name in names)
OBJECT_STORES = tuple(dict.fromkeys(n for names in _OBJECT_STORES.values() for n in names))
# Durable consumers of the event log, by owner (the ConsumerSpecs of each service's app).
DURABLES: dict[str, tuple[str, ...]] = {
    "planner": ("planner",),
    "policy": ("policy", "policy-expiry"),
    "executor": ("executor",),
    "guardians": ("guardians",),
    "audit": ("audit",),
}
# Roles that answer request/reply queries (audit views, the allowlist).
_RESPONDERS = ("audit", "policy")
# Audit's replay pulls from consumers the server names, so it may pull from (and delete)
# any consumer of the log but the other services' durables.
_PULLS_EPHEMERALS = ("audit",)

# JetStream API requests that only read; open to every role.
_API_READS = (
    "$JS.API.INFO",
    "$JS.API.STREAM.INFO.*",
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.LIST",
    "$JS.API.STREAM.MSG.GET.*",
    "$JS.API.DIRECT.GET.>",
    "$JS.API.CONSUMER.INFO.*.*",
    "$JS.API.CONSUMER.NAMES.*",
    "$JS.API.CONSUMER.LIST.*",
)
_CONSUMER = "$JS.API.CONSUMER"


class CredentialsError(RuntimeError):
    """The credentials file is unreadable or lacks a role."""


@dataclass(frozen=True)
class Login:
    user: str
    password: str = ""

    def __repr__(self) -> str:  # never print the password
        return f"Login(user={self.user!r})"


def bucket(prefix: str, name: str) -> str:
    """The bucket name ``ensure_kv`` and the object stores use."""
    return f"{prefix}_{name}".replace(".", "_")


def store_ttl(name: str) -> float | None:
    """Seconds the object store ``name`` keeps an object; None for ever."""
    return _STORE_TTL.get(name)


def inbox_prefix(role: str) -> str:
    """Where a role's replies and consumer deliveries arrive; only that role may listen."""
    return f"_INBOX.{role}"


def permissions(role: str, prefix: str) -> dict[str, Any]:
    """The ``permissions`` block of one user in the server's ``authorization`` config."""
    if role == ADMIN:
        # Admin listens only to inboxes too: a push consumer delivers only to subjects
        # someone subscribes to, so nobody may subscribe in the event space.
        return {"publish": {"allow": [">"]}, "subscribe": {"allow": ["_INBOX.>"]}}
    if role not in _RUN_EVENTS:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    allow, deny = _jetstream(role, prefix)
    allow += [subjects.any_run(prefix, kind) for kind in _RUN_EVENTS[role]]
    if role == "planner":
        allow.append(f"{prefix}.thread.>")
    if role == "audit":  # the audit stream is the audit service's alone to write
        allow += subjects.audit_stream_subjects(prefix)
    if role == CLIENT:
        allow.append(f"{prefix}.query.>")
    elif role == EXTERNAL:
        allow += [subjects.any_signed(prefix, kind) for kind in subjects.SIGNED_KINDS]
    else:
        allow.append(f"{prefix}.deadletter.>")  # every consumer loop may dead-letter
    allow += [f"$KV.{bucket(prefix, name)}.>" for name in _KV_BUCKETS.get(role, ())]
    allow += [f"$O.{bucket(prefix, name)}.>" for name in _OBJECT_STORES.get(role, ())]
    subscribe = [f"{inbox_prefix(role)}.>"]
    if role in _RESPONDERS:
        subscribe.append(f"{prefix}.query.>")
    out: dict[str, Any] = {
        "publish": {"allow": allow, "deny": deny},
        "subscribe": {"allow": subscribe},
    }
    if role in _RESPONDERS:
        out["allow_responses"] = True
    return out


def _jetstream(role: str, prefix: str) -> tuple[list[str], list[str]]:
    """The JetStream API a service or client role may use: ``(allow, deny)``.

    No stream administration at all. Consumers only by name: the legacy create subject
    without one lets the request body name any consumer, a service's durable included.
    """
    log = subjects.stream_name(prefix)
    # Streams read through (ordered) consumers: the log, the audit stream, any object
    # store (the gateway shows previews), and the role's own KV buckets (listing keys);
    # other buckets are read by direct get.
    read = [log, subjects.audit_stream_name(prefix)]
    read += [f"OBJ_{bucket(prefix, name)}" for name in OBJECT_STORES]
    read += [f"KV_{bucket(prefix, name)}" for name in _KV_BUCKETS.get(role, ())]
    allow = [*_API_READS, "$JS.FC.>"]  # flow control: the ordered consumers' replies
    for stream in read:
        allow += [f"{_CONSUMER}.CREATE.{stream}.*", f"{_CONSUMER}.CREATE.{stream}.*.>"]
    for durable in DURABLES.get(role, ()):
        allow += [
            f"{_CONSUMER}.DURABLE.CREATE.{log}.{durable}",
            f"{_CONSUMER}.MSG.NEXT.{log}.{durable}",
            f"{_CONSUMER}.DELETE.{log}.{durable}",  # to recreate it when it was tampered with
            f"$JS.ACK.{log}.{durable}.>",
        ]
    if role in _PULLS_EPHEMERALS:
        allow += [f"{_CONSUMER}.MSG.NEXT.{log}.*", f"{_CONSUMER}.DELETE.{log}.*"]
    # Purging is how nats-py replaces an object's chunks; nothing else is ever purged.
    allow += [f"$JS.API.STREAM.PURGE.OBJ_{bucket(prefix, n)}" for n in _OBJECT_STORES.get(role, ())]
    deny = [
        f"{_CONSUMER}.{verb}.{log}.{durable}{rest}"
        for other, durables in DURABLES.items()
        if other != role
        for durable in durables
        for verb, rest in (("CREATE", ""), ("CREATE", ".>"), ("MSG.NEXT", ""), ("DELETE", ""))
    ]
    return allow, deny


def authorization(passwords: Mapping[str, str], prefix: str) -> dict[str, Any]:
    """The server's ``authorization`` block: every role, no anonymous access."""
    return {
        "users": [
            {"user": role, "password": passwords[role], "permissions": permissions(role, prefix)}
            for role in ROLES
        ]
    }


def load_or_create(path: Path) -> dict[str, str]:
    """The home's passwords, created (owner-only) on first use and kept across restarts,
    so services that reconnect after a server restart still log in. A file from before a
    role existed gets a password for it; the others stay as they were."""
    passwords: dict[str, str] = {}
    if path.exists():
        try:
            return read(path)
        except CredentialsError:
            passwords = _known(path)  # a role added since: keep the rest, add it below
            if not passwords:
                raise
    path.parent.mkdir(parents=True, exist_ok=True)
    passwords = {role: passwords.get(role) or secrets.token_urlsafe(24) for role in ROLES}
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"version": 1, "users": passwords}, out)
    tmp.replace(path)
    return passwords


def _known(path: Path) -> dict[str, str]:
    """The roles a readable credentials file has a password for; none if it is unreadable."""
    try:
        users = json.loads(path.read_text())["users"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(users, dict):
        return {}
    return {role: value for role, value in users.items() if isinstance(value, str)}


def read(path: Path) -> dict[str, str]:
    try:
        doc = json.loads(path.read_text())
        users = doc["users"]
    except OSError as exc:
        raise CredentialsError(f"cannot read the NATS credentials {path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(
            f"{path} is not a blendmesh credentials file; delete it and restart the mesh "
            "to create a new one"
        ) from None
    missing = [role for role in ROLES if not isinstance(users.get(role), str)]
    if missing:
        raise CredentialsError(
            f"{path} has no password for {', '.join(missing)}; delete it and restart the mesh"
        )
    return {role: users[role] for role in ROLES}


def login_for(path: Path, role: str) -> Login | None:
    """The role's login from the credentials file, or None when there is none (a server
    without users, or credentials carried in NATS_URL)."""
    if not path.exists():
        return None
    return Login(role, read(path)[role])
