"""What the planner and the policy share to check a signed message (docs/adr/0010).

A program outside the mesh publishes on ``<prefix>.signed.<run_id>.<kind>``; the service
that owns the check reads it from the log, verifies its signature against the home's
user registry and, when it holds, passes on a copy under the run's own subject. Only that
copy is a fact of the run: nothing else reads the signed subjects.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

import msgspec

from contracts import subjects
from contracts.events import AnyEvent, Event, RunEvent, derive_event_id, event_kind
from services.runtime.consumer import Delivery, Handler
from services.runtime.identity import IdentityRefused, UserEntry, verify
from services.runtime.users import UsersFile, UsersFileError

# Refusals show even where a command keeps its log quiet: someone tried to act as another.
log = logging.getLogger("blendmesh.security")

_E = TypeVar("_E", bound=RunEvent)


def shaped(delivery: Delivery, event: AnyEvent, kind: type[_E]) -> _E:
    """``event`` as ``kind`` when it is the kind its subject takes and its run is the
    subject's; ``IdentityRefused`` says which is not (``signed_by`` checks the signature)."""
    tag = str(kind.__struct_config__.tag)
    if not isinstance(event, kind):
        raise IdentityRefused(f"{delivery.subject} takes a {tag}, not a {event_kind(event)}")
    if event.run_id != subjects.signed_run_id(delivery.subject):
        raise IdentityRefused(
            f"the {tag} is for run {event.run_id} but was sent on {delivery.subject}; "
            f"send it on {subjects.signed('<prefix>', event.run_id, tag.split('.', 1)[1])}"
        )
    return event


def signed_by(users: UsersFile, delivery: Delivery) -> UserEntry:
    """The registered user whose key signed the delivered message."""
    try:
        by_key = users.by_key()
    except UsersFileError as exc:
        log.error("cannot check signed messages: %s", exc)
        raise IdentityRefused(
            "the mesh's user registry cannot be read, so no signature is accepted; "
            "its operator sees why in the log"
        ) from None
    return verify(by_key, delivery.subject, delivery.data, delivery.headers)


def passed_on(event: _E) -> _E:
    """The checked copy for the run's own subject. Its id is new (derived from the run
    and the signed one): both sit in the one log, whose duplicate window would drop a
    second message with the same ``Nats-Msg-Id``."""
    fresh = derive_event_id(f"{event.run_id}/{event.event_id}", f"signed.{event_kind(event)}")
    return msgspec.structs.replace(event, event_id=fresh)


def routed(signed: Handler, rest: Handler) -> Handler:
    """A consumer's handler: signed subjects go to ``signed``, everything else to ``rest``."""

    async def handle(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        if subjects.signed_run_id(delivery.subject) is not None:
            return await signed(event, delivery)
        return await rest(event, delivery)

    return handle
