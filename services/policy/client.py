"""What the doors (CLI, gateway) may ask of the policy service: list and revoke approvals.

Only the policy service writes the allowlist bucket; everyone else asks it over
request/reply through these functions. import-linter holds that border (pyproject.toml).
"""

from __future__ import annotations

import msgspec
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from contracts import subjects
from contracts.allowlist import (
    LIST,
    REVOKE,
    AllowlistEntry,
    AllowlistListQuery,
    AllowlistReply,
    AllowlistRevoke,
)
from services.policy.ports import AllowlistError, AllowlistRefused

__all__ = ["AllowlistError", "AllowlistRefused", "list_entries", "revoke_entry"]

_encoder = msgspec.json.Encoder()


async def _ask(
    nc: Client, prefix: str, name: str, body: msgspec.Struct, timeout: float
) -> list[AllowlistEntry]:
    subject = subjects.query(prefix, name)
    try:
        msg = await nc.request(subject, _encoder.encode(body), timeout=timeout)
    except (NoRespondersError, TimeoutError, NatsTimeoutError):
        raise AllowlistError(
            f"the policy service did not answer {subject}; start the mesh (`blendmesh up`)"
        ) from None
    reply = msgspec.json.decode(msg.data, type=AllowlistReply)
    if not reply.ok:
        raise AllowlistRefused(reply.error or f"the policy service refused {name}")
    return reply.entries


async def list_entries(
    nc: Client, prefix: str, user: str | None = None, timeout: float = 5.0
) -> list[AllowlistEntry]:
    """The standing approvals of ``user`` (every user's when None)."""
    entries: list[AllowlistEntry] = await _ask(
        nc, prefix, LIST, AllowlistListQuery(user=user), timeout
    )
    return entries


async def revoke_entry(
    nc: Client,
    prefix: str,
    entry_id: str,
    user: str | None = None,
    timeout: float = 5.0,
    revoked_by: str = "",
) -> AllowlistEntry:
    """Revoke one entry and return it; raises AllowlistError when there is none. The log
    records the revocation and ``revoked_by``, who asked."""
    body = AllowlistRevoke(entry_id=entry_id, user=user, revoked_by=revoked_by)
    entries: list[AllowlistEntry] = await _ask(nc, prefix, REVOKE, body, timeout)
    return entries[0]
