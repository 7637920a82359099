"""Protected-resource metadata (RFC 9728) and the ``WWW-Authenticate`` challenge.

The MCP authorization spec (2025-11-25) has a client that got 401 read
``resource_metadata`` from the challenge, fetch that document, and find there the
authorization server to ask for a token for ``resource``. The document is served at
``/.well-known/oauth-protected-resource`` and, for ``/mcp``, with that path appended
(RFC 9728 §3.1), both naming the one configured resource: the audience tokens must carry.
A proxy that serves blendmesh under a path maps its well-known address to one of these.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from services.doors.gateway.oauth.settings import OAuthSettings

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(resource: str) -> str:
    """Where the resource's metadata is: the well-known path between host and path."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{parts.path.rstrip('/')}"


def document(rules: OAuthSettings) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "resource": rules.resource,
        "authorization_servers": [rules.issuer],
        "bearer_methods_supported": ["header"],  # never a query or form parameter
        "resource_signing_alg_values_supported": list(rules.algorithms),
        "resource_name": "blendmesh",
    }
    if rules.scopes:
        doc["scopes_supported"] = list(rules.scopes)
    return doc


def challenge(rules: OAuthSettings | None, error: str | None = None) -> str:
    """The ``WWW-Authenticate`` value: ``error`` is ``invalid_token`` when a token was sent
    and refused, ``insufficient_scope`` when it lacked a scope (RFC 6750 §3.1)."""
    parts = ['Bearer realm="blendmesh"']
    if rules is not None:
        parts.append(f'resource_metadata="{metadata_url(rules.resource)}"')
    if error is not None:
        parts.append(f'error="{error}"')
    if rules is not None and rules.scopes:
        parts.append(f'scope="{" ".join(rules.scopes)}"')
    return ", ".join(parts)
