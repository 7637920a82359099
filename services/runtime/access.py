"""Who may write what on the bus: one NATS user per service role (docs/architecture.md).

The server blendmesh starts knows these users and refuses anonymous clients. Each role
may publish only the events it owns (only policy writes ``approved``, only the executor
writes ``op_*``, a client writes ``requested`` and ``approval_resolved``), only into the
KV buckets and object stores it owns, and no role may delete or reconfigure a stream.
Reads stay open to every role: the log is the shared record, and the JetStream API
needed to read it cannot be split by stream cheaply.

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

ADMIN = "admin"  # creates the event log before the services start; nothing else
CLIENT = "client"  # the CLI and the HTTP gateway: people asking for runs
SERVICE_ROLES = ("planner", "policy", "executor", "audit")
ROLES = (ADMIN, CLIENT, *SERVICE_ROLES)

# Run events each role may append (the subject's last token).
_RUN_EVENTS: dict[str, tuple[str, ...]] = {
    CLIENT: ("requested", "approval_resolved"),
    "planner": ("planned", "plan_rejected", "completed", "failed"),
    "policy": ("policy_decided", "approval_requested", "approved", "denied"),
    "executor": (
        "op_started",
        "op_succeeded",
        "op_failed",
        "op_rolled_back",
        "op_skipped",
        "executed",
    ),
    "audit": (),
}
_KV_BUCKETS: dict[str, tuple[str, ...]] = {
    "policy": ("allowlist",),
    "executor": ("journal", "leases", "scene_heads", "scene_summaries", "catalog"),
}
_OBJECT_STORES: dict[str, tuple[str, ...]] = {"executor": ("scenes", "previews")}
# Roles that answer request/reply queries (audit views, the allowlist).
_RESPONDERS = ("audit", "policy")

_EVERYONE_PUBLISH = ("$JS.API.>", "$JS.ACK.>", "$JS.FC.>")
# Stream administration that would undo the log's guarantees: deleting a stream (the
# log, the journal, the allowlist), rewriting its config (adding sources that inject
# events), or removing messages.
_NOBODY = (
    "$JS.API.STREAM.DELETE.>",
    "$JS.API.STREAM.UPDATE.>",
    "$JS.API.STREAM.MSG.DELETE.>",
)


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


def permissions(role: str, prefix: str) -> dict[str, Any]:
    """The ``permissions`` block of one user in the server's ``authorization`` config."""
    if role == ADMIN:
        return {"publish": {"allow": [">"]}, "subscribe": {"allow": [">"]}}
    if role not in _RUN_EVENTS:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    allow = list(_EVERYONE_PUBLISH)
    allow += [subjects.any_run(prefix, kind) for kind in _RUN_EVENTS[role]]
    if role == "planner":
        allow.append(f"{prefix}.thread.>")
    if role == CLIENT:
        allow.append(f"{prefix}.query.>")
    else:
        allow.append(f"{prefix}.deadletter.>")  # every consumer loop may dead-letter
    allow += [f"$KV.{bucket(prefix, name)}.>" for name in _KV_BUCKETS.get(role, ())]
    allow += [f"$O.{bucket(prefix, name)}.>" for name in _OBJECT_STORES.get(role, ())]
    deny = list(_NOBODY)
    # Purging is how nats-py replaces an object's chunks, so the executor may purge its
    # own object stores; everything else must stay as written.
    purgeable = {f"OBJ_{bucket(prefix, name)}" for name in _OBJECT_STORES.get(role, ())}
    if purgeable:
        kept = [subjects.stream_name(prefix)]
        kept += [f"KV_{bucket(prefix, n)}" for names in _KV_BUCKETS.values() for n in names]
        deny += [f"$JS.API.STREAM.PURGE.{stream}" for stream in kept]
    else:
        deny.append("$JS.API.STREAM.PURGE.>")
    subscribe = ["_INBOX.>"]
    if role in _RESPONDERS:
        subscribe.append(f"{prefix}.query.>")
    out: dict[str, Any] = {
        "publish": {"allow": allow, "deny": deny},
        "subscribe": {"allow": subscribe},
    }
    if role in _RESPONDERS:
        out["allow_responses"] = True
    return out


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
    so services that reconnect after a server restart still log in."""
    if path.exists():
        return read(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    passwords = {role: secrets.token_urlsafe(24) for role in ROLES}
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"version": 1, "users": passwords}, out)
    tmp.replace(path)
    return passwords


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
