"""A sealed approval: what an MCP Apps card may answer, and for whom.

A card answers an approval by calling the app-only tool ``answer_approval`` through its
host. Hosts keep app-only tools from the model, but the server cannot see who called, so
the call must carry what only the card was given: the run's tool result puts a sealed
approval in its ``_meta`` (which hosts hand to the card, not to the model), naming the
user, the run, the approval, the request hash and the code hashes a person was shown,
with an expiry, under an HMAC of a key that never leaves this server. A forged, altered,
expired or another user's seal is refused; answering twice is refused by the mesh, which
resolves an approval once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from contracts.errors import BlendmeshError

MAX_SEAL_CHARS = 4096  # a seal names a few ids and hashes; anything longer is not one
CARD = "approval"  # an approval card's seal (its label predates the other purposes)
REQUEST_STATE = "request-state"  # MCP 2026-07-28's requestState of a waiting run


class BadSeal(BlendmeshError):
    """The seal is not one this server made for this caller, or it has expired."""


@dataclass(frozen=True)
class Sealed:
    user: str
    run_id: str
    approval_id: str
    request_hash: str
    code_sha256: tuple[str, ...]
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Sealer:
    """Seals and opens approvals with one key (a fresh one per server by default: a card
    is answered through the server whose run result carried it)."""

    key: bytes

    @classmethod
    def fresh(cls) -> Sealer:
        return cls(secrets.token_bytes(32))

    def _mac(self, body: bytes, purpose: str, bound: str) -> bytes:
        # The purpose and what the seal is bound to are under the MAC: a card's seal is
        # no requestState, and a requestState opens only on the request it was made on.
        label = f"blendmesh.{purpose}\0{bound + chr(0) if bound else ''}".encode()
        return hmac.new(self.key, label + body, hashlib.sha256).digest()

    def seal(self, sealed: Sealed, purpose: str = CARD, bound: str = "") -> str:
        fields: dict[str, Any] = {
            "u": sealed.user,
            "r": sealed.run_id,
            "a": sealed.approval_id,
            "h": sealed.request_hash,
            "c": list(sealed.code_sha256),
            "e": sealed.expires_at,
        }
        body = json.dumps(fields, separators=(",", ":"), sort_keys=True).encode()
        return f"{_b64(body)}.{_b64(self._mac(body, purpose, bound))}"

    def open(
        self, seal: str, user: str, now: float, purpose: str = CARD, bound: str = ""
    ) -> Sealed:
        """The approval ``seal`` names, when this server sealed it for ``user``, for
        ``purpose`` and ``bound``, and it has not expired; ``BadSeal`` otherwise (one
        message for every way it is wrong)."""
        refused = BadSeal(
            "this approval card is not valid for you (altered, expired or another user's); "
            "ask `run_status` for the run and approve it in a new card or with the CLI"
        )
        if not isinstance(seal, str) or len(seal) > MAX_SEAL_CHARS or seal.count(".") != 1:
            raise refused
        body_text, mac_text = seal.split(".")
        try:
            body, mac = _unb64(body_text), _unb64(mac_text)
        except (binascii.Error, ValueError):
            raise refused from None
        # One spelling per seal: padding or other base64 variants of a good seal are not it.
        if (_b64(body), _b64(mac)) != (body_text, mac_text):
            raise refused
        if not hmac.compare_digest(mac, self._mac(body, purpose, bound)):
            raise refused
        fields = json.loads(body)  # ours: the MAC holds
        sealed = Sealed(
            user=fields["u"],
            run_id=fields["r"],
            approval_id=fields["a"],
            request_hash=fields["h"],
            code_sha256=tuple(fields["c"]),
            expires_at=fields["e"],
        )
        if sealed.user != user or now >= sealed.expires_at:
            raise refused
        return sealed
