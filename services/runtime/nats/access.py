"""Who may write what on the bus: one NATS user per service role (docs/architecture.md).

The server blendmesh starts knows these users and refuses anonymous clients. Each role
may publish only the events it owns (only policy writes ``approved``, only the executor
writes ``op_*``, a client writes ``requested`` and ``approval_resolved``), only into the
KV buckets and object stores it owns. Of the JetStream API a role gets the reads, named
consumers to read through and its own durable consumers; only admin creates, changes or
deletes a stream, and only admin lists or inspects consumers it does not own
(docs/adr/0007-jetstream-api-least-privilege.md). Reads stay open to every role: the log
is the shared record of the mesh's own services.

Every service, the doors included, answers the NATS services API (``$SRV.PING``,
``$SRV.INFO``, ``$SRV.STATS``) as ``blendmesh-<role>``; the client and admin may ask it.
No login may both ask and answer there: an answer goes wherever the request's reply
subject says, so a login that could answer its own requests could publish anywhere. The
gateway, a client, therefore answers on a login of its own, ``gateway``, which may publish
nothing but those answers (docs/adr/0017-health-on-the-nats-services-api.md).

A person or program outside the mesh logs in as itself, with its user's NKey, and reaches
no JetStream API at all: it may only ask the bus door under ``<prefix>.api.<user>.>`` and
listen under its own inbox and feed (docs/adr/0015-tenancy-user-logins.md). The door
answers with that user's data alone.

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

from contracts import event_kinds, subjects
from contracts.errors import BlendmeshError

ADMIN = "admin"  # creates the streams (log, buckets, stores) before the services start
CLIENT = "client"  # the doors (CLI, gateway, MCP): they authenticate people themselves
DOOR = "door"  # the bus door: answers users' own logins (ADR 0015)
GATEWAY = "gateway"  # the gateway's answers to the services API, and nothing else (ADR 0017)
SERVICE_ROLES = ("planner", "policy", "executor", "guardians", "audit")
# A role no longer here (``external``, ADR 0010) has no user in the server's config, and
# its password is dropped the next time the credentials file is written.
ROLES = (ADMIN, CLIENT, DOOR, GATEWAY, *SERVICE_ROLES)
SERVICES_API = "$SRV.>"  # the NATS services API (nats.micro): PING, INFO, STATS
INBOX_USERS = "_INBOX.u"  # users' inboxes: ``_INBOX.u.<user token>``; "u" is no role

# The run events each role may append (the subject's last token), from the one table of
# run event kinds (contracts/event_kinds.py).
_RUN_EVENTS: dict[str, tuple[str, ...]] = {
    role: event_kinds.published_by(role) for role in (CLIENT, DOOR, *SERVICE_ROLES)
}
_KV_BUCKETS: dict[str, tuple[str, ...]] = {
    "policy": ("allowlist",),
    "executor": (
        "journal",
        "leases",
        "scene_heads",
        "scene_summaries",
        "catalog",
        "scene_tags",
        "render_budgets",  # what each user's render jobs under way cost (docs/renders.md)
        "lib_scene_heads",  # each project's libraries, kept as scenes are (ADR 0060)
    ),
    # The doors set a user's tags on revisions of the user's own scenes (they check that);
    # the executor's collector keeps the tagged revisions (docs/storage.md).
    CLIENT: ("scene_tags",),
}
# The doors stage the files of imports in ``uploads``; the executor loads them, and
# stages there the views it draws, for the doors to hand to their users.
_OBJECT_STORES: dict[str, tuple[str, ...]] = {
    # ``renders``: the frames of render jobs, by content, per user (docs/renders.md).
    "executor": ("scenes", "chunks", "previews", "uploads", "renders", "lib_scenes"),
    CLIENT: ("uploads",),
    DOOR: ("uploads",),
}
# Seconds an object store keeps an object; the others keep theirs for ever. An upload
# outlives any pending approval of its import (BLENDMESH_APPROVAL_TTL, 1 h by default).
_STORE_TTL: dict[str, float] = {"uploads": 24 * 3600.0}
# Every bucket and store: the admin creates them all before the services start.
KV_BUCKETS = tuple(dict.fromkeys(n for names in _KV_BUCKETS.values() for n in names))
OBJECT_STORES = tuple(dict.fromkeys(n for names in _OBJECT_STORES.values() for n in names))
# Durable consumers of the event log, by owner (the ConsumerSpecs of each service's app).
DURABLES: dict[str, tuple[str, ...]] = {
    "planner": ("planner", "planner-cancels"),
    "policy": ("policy", "policy-expiry"),
    "executor": ("executor", "renders"),
    "guardians": ("guardians",),
    "audit": ("audit",),
}
# The executors' one consumer of the render queue: a work queue takes one per subject.
RENDER_WORKERS = "render-workers"
# Roles that answer request/reply queries (audit views, the allowlist; the door: users).
_RESPONDERS = ("audit", "policy", DOOR)
# Audit's replay pulls from consumers the server names, so it may pull from (and delete)
# any consumer of the log but the other services' durables.
_PULLS_EPHEMERALS = ("audit",)

# JetStream API requests that only read; open to every role. Consumers are left out: a
# consumer's info shows its deliver subject, an inbox another login listens on (ADR 0015).
_API_READS = (
    "$JS.API.INFO",
    "$JS.API.STREAM.INFO.*",
    "$JS.API.STREAM.NAMES",
    "$JS.API.STREAM.LIST",
    "$JS.API.STREAM.MSG.GET.*",
    "$JS.API.DIRECT.GET.>",
)
_CONSUMER = "$JS.API.CONSUMER"


class CredentialsError(BlendmeshError, RuntimeError):
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


def user_inbox_prefix(user: str) -> str:
    """Where a user's login gets its replies: under ``_INBOX.u`` so no user name can be
    a role's inbox. ``user`` is the name; the subject carries its token."""
    return f"{INBOX_USERS}.{subjects.subject_token(user)}"


def user_permissions(user: str, prefix: str) -> dict[str, Any]:
    """What a user's own login may do: ask the door as that user, hear its answers and
    the feed of that user's runs. Nothing of JetStream, no queries, no other subjects."""
    token = subjects.subject_token(user)
    return {
        "publish": {"allow": [subjects.door_api(prefix, token, ">")]},
        "subscribe": {"allow": [f"{user_inbox_prefix(user)}.>", subjects.any_feed(prefix, token)]},
    }


def permissions(role: str, prefix: str) -> dict[str, Any]:
    """The ``permissions`` block of one user in the server's ``authorization`` config."""
    if role == ADMIN:
        # Admin listens only to inboxes too: a push consumer delivers only to subjects
        # someone subscribes to, so nobody may subscribe in the event space.
        return {"publish": {"allow": [">"]}, "subscribe": {"allow": ["_INBOX.>"]}}
    if role == GATEWAY:  # hears the services API's requests, publishes only its answers
        return {
            "publish": {"deny": [">"]},
            "subscribe": {"allow": [SERVICES_API]},
            "allow_responses": True,
        }
    if role not in _RUN_EVENTS:
        raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    allow, deny = _jetstream(role, prefix)
    allow += [subjects.any_run(prefix, kind) for kind in _RUN_EVENTS[role]]
    allow += [
        f"{prefix}.{family}.*.{name}" for family, name in event_kinds.studio_published_by(role)
    ]
    if role == "planner":
        allow.append(f"{prefix}.thread.>")
    # Scene events: a revoked standing approval (policy's, spec 002 §9), a review (a door's).
    allow += [subjects.any_scene(prefix, k) for k in event_kinds.scene_published_by(role)]
    if role == "audit":  # the audit stream is the audit service's alone to write
        allow += subjects.audit_stream_subjects(prefix)
    if role == CLIENT:
        allow += [f"{prefix}.query.>", SERVICES_API]  # asks; never answers (ADR 0017)
    elif role == DOOR:  # asks audit for a user's records, passes on a user's run events
        allow += [subjects.query(prefix, n) for n in ("run", "runs")]
        allow.append(subjects.any_feed(prefix))
        # Its answers, by a permission of its own: the server forgets the permission to
        # answer a request it delivered whenever it reloads its users (a user added or
        # suspended), and the answers under way would be refused. The door answers only
        # into the asker's own inbox (services/doors/bus/app.py).
        allow.append(f"{INBOX_USERS}.>")
    else:
        allow.append(f"{prefix}.deadletter.>")  # every consumer loop may dead-letter
    allow += [f"$KV.{bucket(prefix, name)}.>" for name in _KV_BUCKETS.get(role, ())]
    allow += [f"$O.{bucket(prefix, name)}.>" for name in _OBJECT_STORES.get(role, ())]
    subscribe = [f"{inbox_prefix(role)}.>"]
    if role == DOOR:
        subscribe.append(subjects.any_door_api(prefix))
    elif role in _RESPONDERS:
        subscribe.append(f"{prefix}.query.>")
    if role != CLIENT:  # every service answers the services API
        subscribe.append(SERVICES_API)
    out: dict[str, Any] = {
        "publish": {"allow": allow, "deny": deny},
        "subscribe": {"allow": subscribe},
    }
    if role != CLIENT:
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
    # nats-py asks a KV listing's or an object read's consumer for its info. On the logs
    # (the event log and the audit stream) a role inspects only its own durables: those
    # hold the other logins' followers, whose deliver subjects are their inboxes.
    allow += [f"{_CONSUMER}.INFO.{stream}.*" for stream in read[2:]]
    for durable in DURABLES.get(role, ()):
        allow += [
            f"{_CONSUMER}.INFO.{log}.{durable}",  # to notice it was tampered with
            f"{_CONSUMER}.DURABLE.CREATE.{log}.{durable}",
            f"{_CONSUMER}.MSG.NEXT.{log}.{durable}",
            f"{_CONSUMER}.DELETE.{log}.{durable}",  # to recreate it when it was tampered with
            f"$JS.ACK.{log}.{durable}.>",
        ]
    if role == "executor":  # puts a job's frames on the render queue and takes them
        queue = subjects.render_queue_name(prefix)
        allow += [
            *subjects.render_queue_subjects(prefix),
            f"{_CONSUMER}.INFO.{queue}.{RENDER_WORKERS}",
            f"{_CONSUMER}.DURABLE.CREATE.{queue}.{RENDER_WORKERS}",
            f"{_CONSUMER}.CREATE.{queue}.{RENDER_WORKERS}",
            f"{_CONSUMER}.CREATE.{queue}.{RENDER_WORKERS}.>",
            f"{_CONSUMER}.MSG.NEXT.{queue}.{RENDER_WORKERS}",
            f"$JS.ACK.{queue}.{RENDER_WORKERS}.>",
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


def authorization(
    passwords: Mapping[str, str], prefix: str, keys: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The server's ``authorization`` block: every role by password, every registered
    user by NKey (``keys`` maps a public key to its user's name), no anonymous access."""
    roles = [
        {"user": role, "password": passwords[role], "permissions": permissions(role, prefix)}
        for role in ROLES
    ]
    users = [
        {"nkey": key, "permissions": user_permissions(user, prefix)}
        for key, user in sorted((keys or {}).items())
    ]
    return {"users": roles + users}


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
