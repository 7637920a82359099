"""User NKeys for tests of signed requests: made fresh, registered in a mesh's home."""

from __future__ import annotations

import os
from pathlib import Path

import nkeys

from services.runtime.server import users


def new_seed() -> bytes:
    """A fresh user NKey seed (``SU...``)."""
    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))


def public_key(seed: bytes) -> str:
    """The public key (``U...``) of a user seed."""
    return str(nkeys.from_seed(bytearray(seed)).public_key.decode())


def register(home: Path, name: str, approver: bool = False) -> bytes:
    """Register a new key for ``name`` in ``home``'s registry; its seed."""
    seed = new_seed()
    users.add(home / users.FILE_NAME, name, public_key(seed), approver)
    return seed
