"""Who joins the bus: the servers of a NATS URL, its user, and the anonymous-login policy.

Without credentials anyone who reaches the server may write the log, so a client that joins
anonymously warns once per URL, and BLENDMESH_REQUIRE_AUTH turns the warning into a refusal.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from contracts.errors import BlendmeshError
from services.runtime.nats.access import Login

# Security warnings show even where a command keeps its log quiet (the CLI logs errors only).
security_log = logging.getLogger("blendmesh.security")
security_log.setLevel(logging.WARNING)


class LoginRefused(BlendmeshError, ConnectionError):
    """The server does not accept this client's user or password."""


class AnonymousRefused(LoginRefused):
    """BLENDMESH_REQUIRE_AUTH is set and there are no credentials to join NATS with."""


def servers(url: str) -> list[str]:
    """The servers of a NATS URL: one, or several separated by commas (a cluster's)."""
    return [u.strip() for u in url.split(",") if u.strip()]


def url_user(url: str) -> str | None:
    """The user (or token) of a NATS URL, or of any URL in a comma-separated list."""
    users = [urlsplit(u.strip()).username for u in url.split(",")]
    return next((user for user in users if user), None)


def joins_anonymously(url: str, login: Login | None) -> bool:
    return login is None and url_user(url) is None


def refuse_anonymous(url: str, login: Login | None, required: bool) -> None:
    """With ``required`` (BLENDMESH_REQUIRE_AUTH), refuse to join ``url`` without credentials."""
    if required and joins_anonymously(url, login):
        raise AnonymousRefused(
            f"BLENDMESH_REQUIRE_AUTH is set and there are no credentials for NATS at {url}; "
            "use the credentials file of the mesh that runs it (BLENDMESH_NATS_CREDENTIALS, "
            "or the same --home), or put user:password in NATS_URL"
        )


_WARNED: set[str] = set()


def warn_anonymous(url: str) -> None:
    if url in _WARNED:
        return
    _WARNED.add(url)
    security_log.warning(
        "joined NATS at %s without credentials: unless that server restricts anonymous "
        "clients itself, anyone who reaches it can append approvals and operations to the "
        "event log, create streams that republish into it, delete or rewrite the log, write "
        "the KV buckets (allowlist, journal, leases) and object stores, and delete or replace "
        "the services' consumers; set BLENDMESH_REQUIRE_AUTH=1 to refuse to join without "
        "credentials",
        url,
    )
