"""Signed requests: who sent a message the ``external`` login published (docs/adr/0010).

NATS does not tell a consumer who published a message, and subjects do not carry the
user, so a program outside the mesh proves who it acts for by signing what it sends with
its user NKey (ed25519). It signs ``subject + "\\n" + body``, the exact bytes it
publishes, so a signature neither fits another body nor another run's subject. The
headers carry the public key (``U...``) and the signature (base64url).

Pure: no I/O. The registry of users and their keys is ``services/runtime/users.py``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass

import nacl.exceptions
import nacl.signing
import nkeys

SIGNER = "Blendmesh-Signer"  # header: the signer's public user key, "U" and 55 characters
SIGNATURE = "Blendmesh-Signature"  # header: base64url of the ed25519 signature
PUBLIC_KEY_CHARS = 56
SIGNATURE_BYTES = 64
MAX_SIGNATURE_CHARS = 100  # 64 bytes are 86 base64url characters; padding is accepted


class IdentityRefused(ValueError):
    """A signed message does not prove who sent it; the message says what to fix."""


@dataclass(frozen=True)
class UserEntry:
    """One registered user: the public keys that sign for them, and whether they may
    resolve other users' approvals."""

    name: str
    keys: tuple[str, ...]
    approver: bool = False


def signed_bytes(subject: str, body: bytes) -> bytes:
    """What a signature covers: the subject it was published on, a newline, the body."""
    return subject.encode() + b"\n" + body


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


def _signature(value: str) -> bytes:
    if len(value) > MAX_SIGNATURE_CHARS:
        raise IdentityRefused(f"{SIGNATURE} is longer than an ed25519 signature")
    try:
        padded = value + "=" * (-len(value) % 4)
        sig = base64.b64decode(padded, altchars=b"-_", validate=True)  # no stray characters
    except (binascii.Error, ValueError):
        raise IdentityRefused(f"{SIGNATURE} is not base64url") from None
    if len(sig) != SIGNATURE_BYTES:
        raise IdentityRefused(f"{SIGNATURE} holds {len(sig)} bytes, not an ed25519 signature's 64")
    return sig


def verify(
    users: Mapping[str, UserEntry], subject: str, body: bytes, headers: Mapping[str, str]
) -> UserEntry:
    """The registered user whose key signed ``body`` on ``subject``.

    ``users`` maps each registered public key to its user. Raises ``IdentityRefused`` for
    an unsigned message, a malformed or unknown key, or a signature that does not verify.
    """
    key, sig = headers.get(SIGNER), headers.get(SIGNATURE)
    if not key or not sig:
        raise IdentityRefused(
            f"the message is not signed: send the {SIGNER} and {SIGNATURE} headers, "
            "signing subject + newline + body with your user NKey (docs/bus.md)"
        )
    raw = _raw_public_key(key, SIGNER)
    user = users.get(key)
    if user is None:
        raise IdentityRefused(
            f"key {key} is not registered with this mesh: its operator adds it with "
            f"`blendmesh users add NAME --key {key}`"
        )
    try:
        nacl.signing.VerifyKey(raw).verify(signed_bytes(subject, body), _signature(sig))
    except nacl.exceptions.BadSignatureError:
        raise IdentityRefused(
            f"the signature of key {key} does not match this message: sign exactly the "
            "bytes you publish, the subject, a newline and the body"
        ) from None
    return user


def sign(seed: bytes, subject: str, body: bytes) -> dict[str, str]:
    """The two headers that sign ``body`` on ``subject`` with a user NKey seed (``SU...``)."""
    pair = nkeys.from_seed(bytearray(seed))
    try:
        sig = pair.sign(signed_bytes(subject, body))
        public = pair.public_key.decode()
    finally:
        pair.wipe()
    return {SIGNER: public, SIGNATURE: base64.urlsafe_b64encode(sig).rstrip(b"=").decode()}


def may_resolve(user: UserEntry, run_user: str) -> bool:
    """Whether ``user`` may answer an approval of a run ``run_user`` asked for."""
    return user.name == run_user or user.approver
