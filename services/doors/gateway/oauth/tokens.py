"""Judging one access token against the issuer's keys: pure, no I/O.

The order matters: the header's ``alg`` is checked against the allowed list before any key
is looked up (``none`` and HS* never reach a key), the key must be of the algorithm's
family (an RSA key never verifies an ES256 token, and no public key is ever an HMAC
secret), then PyJWT checks the signature, ``iss``, ``aud`` (the resource, RFC 8707),
``exp`` and ``nbf`` with the configured leeway. Every refusal says what was wrong and
what to do, and never quotes the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jwt

from contracts.errors import BlendmeshError
from services.doors.gateway.oauth.settings import OAuthSettings

MAX_TOKEN_CHARS = 16 * 1024  # far above any real access token; bounds what is parsed
MAX_KEYS = 64  # per JWKS document; an issuer rotating keys publishes a handful
_FAMILY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


class TokenRefused(BlendmeshError):
    """The token does not let its bearer in; the message says why, safe to show them."""


class ScopeMissing(TokenRefused):
    """The token is good but lacks a scope blendmesh requires (403, insufficient_scope)."""


@dataclass(frozen=True)
class Header:
    alg: str
    kid: str  # "" when the token names none


def looks_like_jwt(token: str) -> bool:
    """Three base64url parts: anything else is a static token, or nothing."""
    return token.count(".") == 2 and len(token) <= MAX_TOKEN_CHARS


def header_of(token: str, rules: OAuthSettings) -> Header:
    """The token's algorithm and key id, refused unless the algorithm is allowed."""
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenRefused(f"the bearer token is longer than {MAX_TOKEN_CHARS} characters")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise TokenRefused("the bearer token is not a JWT (its header does not decode)") from None
    alg, kid = header.get("alg"), header.get("kid", "")
    if not isinstance(alg, str) or alg not in rules.algorithms:
        shown = alg[:20] if isinstance(alg, str) else "missing"
        raise TokenRefused(
            f"the token is signed with alg {shown!r}, which blendmesh does not accept; "
            f"it accepts {', '.join(rules.algorithms)} (a signature by the issuer's key)"
        )
    if not isinstance(kid, str) or len(kid) > 256:
        raise TokenRefused("the token's kid (key id) is not a string of at most 256 characters")
    return Header(alg=alg, kid=kid)


def keys_of(document: Any, where: str) -> dict[str, Mapping[str, Any]]:
    """A JWKS document's signing keys by kid ("" for a key without one); the rest skipped."""
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError(f"{where} is not a JWKS document (no keys list)")
    found: dict[str, Mapping[str, Any]] = {}
    for key in keys[:MAX_KEYS]:
        if not isinstance(key, dict) or key.get("use", "sig") != "sig":
            continue
        if key.get("kty") not in _FAMILY.values() or "d" in key:  # no secrets, no private keys
            continue
        kid = key.get("kid", "")
        if isinstance(kid, str):
            found.setdefault(kid, key)
    return found


def _public_key(jwk: Mapping[str, Any], alg: str) -> jwt.PyJWK:
    if jwk.get("kty") != _FAMILY[alg[:2]] or jwk.get("alg", alg) != alg:
        raise TokenRefused(
            f"the token's alg {alg} does not fit the issuer's key {jwk.get('kid', '')!r}; "
            "the token was not signed by that key"
        )
    try:
        return jwt.PyJWK(dict(jwk), algorithm=alg)
    except jwt.PyJWTError:
        raise TokenRefused(f"the issuer's key {jwk.get('kid', '')!r} cannot be read") from None


def audiences(resource: str) -> list[str]:
    """The audiences that name ``resource``: a URL with no path is the same with ``/``
    (RFC 3986 §6.2.3), and clients differ in which they ask for (the MCP SDK adds it)."""
    if urlsplit(resource).path in ("", "/"):
        bare = resource.rstrip("/")
        return [bare, f"{bare}/"]
    return [resource]


def claims_of(token: str, header: Header, jwk: Mapping[str, Any], rules: OAuthSettings) -> dict:
    """The token's claims once its signature, issuer, audience and times hold."""
    key = _public_key(jwk, header.alg)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key.key,
            algorithms=[header.alg],
            audience=audiences(rules.resource),
            issuer=rules.issuer,
            leeway=rules.leeway,
            options={"require": ["exp", "iss", "aud"]},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRefused("the token has expired; get a new one from the issuer") from None
    except jwt.ImmatureSignatureError:
        raise TokenRefused("the token is not valid yet (nbf or iat in the future)") from None
    except jwt.InvalidAudienceError:
        raise TokenRefused(
            f"the token is for another audience; ask the issuer for one with "
            f"resource={rules.resource} (RFC 8707)"
        ) from None
    except jwt.InvalidIssuerError:
        raise TokenRefused(f"the token was not issued by {rules.issuer}") from None
    except jwt.MissingRequiredClaimError as exc:
        raise TokenRefused(f"the token has no {exc.claim} claim") from None
    except jwt.InvalidSignatureError:
        raise TokenRefused("the token's signature does not verify; it was altered") from None
    except jwt.PyJWTError:
        raise TokenRefused("the token cannot be read as a signed JWT") from None
    return claims


def _scopes(claims: Mapping[str, Any]) -> set[str]:
    # RFC 9068 and most issuers: "scope", a space-separated string; some send "scp", a list.
    raw = claims.get("scope", claims.get("scp", ""))
    if isinstance(raw, str):
        return set(raw.split())
    if isinstance(raw, list):
        return {s for s in raw if isinstance(s, str)}
    return set()


def user_of(claims: Mapping[str, Any], rules: OAuthSettings) -> str:
    """The blendmesh user the token's subject maps to, once its scopes are enough."""
    subject = claims.get(rules.subject_claim)
    if not isinstance(subject, str) or not subject:
        raise TokenRefused(f"the token has no {rules.subject_claim} claim naming its subject")
    missing = [s for s in rules.scopes if s not in _scopes(claims)]
    if missing:
        raise ScopeMissing(
            f"the token lacks the scope {' '.join(missing)}; ask the issuer for "
            f"scope={' '.join(rules.scopes)}"
        )
    user = rules.user_of(subject)
    if user is None:
        raise TokenRefused(
            f"the token's subject {subject[:80]!r} is not a blendmesh user; an operator maps "
            "it with subject=user in BLENDMESH_OAUTH_SUBJECTS (or its _FILE)"
        )
    return user
