"""Who a user is on the bus: the public NKeys they log in with (docs/adr/0015).

Pure: no I/O. The registry of users and their keys is ``services/runtime/server/users.py``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import nkeys

from contracts.errors import BlendmeshError

PUBLIC_KEY_CHARS = 56


class IdentityRefused(BlendmeshError, ValueError):
    """A key is not a user's public NKey; the message says what to fix."""


@dataclass(frozen=True)
class UserEntry:
    """One registered user: the public keys they log in with, and whether they may
    resolve other users' approvals."""

    name: str
    keys: tuple[str, ...]
    approver: bool = False


def _raw_public_key(key: str, what: str) -> bytes:
    """The 32 ed25519 bytes of a user public key, checked (prefix ``U``, checksum)."""
    if len(key) != PUBLIC_KEY_CHARS or not key.startswith("U"):
        raise IdentityRefused(
            f"{what} {key[:60]!r} is not a user public key: it is 'U' and 55 more "
            "characters (an NKey made with `nk -gen user` or nkeys.createUser())"
        )
    try:
        raw = base64.b32decode(key)
    except (binascii.Error, ValueError):
        raise IdentityRefused(f"{what} {key!r} is not base32: give the public key") from None
    if raw[0] != nkeys.PREFIX_BYTE_USER or nkeys.crc16_checksum(raw[:-2]) != raw[-2:]:
        raise IdentityRefused(f"{what} {key!r} fails its checksum: give the key as made")
    return raw[1:-2]


def check_public_key(key: str, what: str = "key") -> str:
    """``key`` when it is a well-formed user public key; IdentityRefused names what is not."""
    _raw_public_key(key, what)
    return key


def may_resolve(resolver: str, run_user: str, approvers: frozenset[str] | set[str]) -> bool:
    """Whether ``resolver`` may answer an approval of a run ``run_user`` asked for: the
    run's own user, or one the registry marks ``approver``."""
    return resolver == run_user or resolver in approvers
