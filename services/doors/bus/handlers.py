"""The door's verbs: each answers one user, named by the subject the server let them use.

Ownership is the doors' one rule (``services/doors/core/ownership.py``), and whatever is not the
asker's answers exactly like something that does not exist, so ids cannot be probed.
Nothing here touches NATS: the reads and the writer are ports (``ports.py``).
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from contracts.changes import to_data
from contracts.door import (
    MAX_FILE_CHUNK,
    MAX_LIST,
    VERBS,
    ChangesQuery,
    DoorError,
    DoorReply,
    ErrorCode,
    FileRef,
    FileUpload,
    ListQuery,
    ReviewAsk,
    RunRef,
    run_prefix,
)
from contracts.errors import BlendmeshError
from contracts.events import (
    ApprovalRequested,
    ApprovalResolved,
    CancelRequested,
    RunRequested,
    decode_event,
)
from contracts.request_limits import request_problem
from contracts.resolutions import canonical_resolution
from contracts.reviews import ReviewRefused
from contracts.session import BUS
from services.doors.bus.ports import (
    DoorUnavailable,
    Files,
    MeshReads,
    NotTheirs,
    RunWriter,
    SceneReviews,
)
from services.doors.bus.steer import steered
from services.doors.bus.studio_verbs import StudioVerbs
from services.doors.core import ownership, pages
from services.doors.core.cancels import RunOver, cancel_of
from services.doors.core.quota import QuotaExceeded
from services.doors.core.steering import NoRun, SteerInvalid, SteerRefused
from services.doors.core.studio import Forbidden, SceneLocked, Studio
from services.runtime.server.identity import UserEntry, may_resolve

log = logging.getLogger("blendmesh.security")

# One answer stays well under NATS's 1 MB message: more events are read with ``offset``.
MAX_REPLY_BYTES = 768 * 1024

Verb = Callable[[UserEntry, bytes], Awaitable[DoorReply]]
_T = TypeVar("_T")


class Refused(BlendmeshError):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def refused(code: ErrorCode, message: str) -> DoorReply:
    return DoorReply(ok=False, error=DoorError(code=code, message=message))


def _decode(data: bytes, kind: type[_T], example: str) -> _T:
    try:
        return msgspec.json.decode(data or b"{}", type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Refused("INVALID", f"{exc}; send JSON like {example}") from None


def _event(data: bytes, kind: type[_T], verb: str, tag: str) -> _T:
    """The event ``verb`` takes, decoded from ``data``; refused as INVALID otherwise."""
    try:
        event = decode_event(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise Refused("INVALID", f"not a {tag} event: {exc}") from None
    if not isinstance(event, kind):
        raise Refused("INVALID", f"{verb} takes a {tag} event")
    return event


@dataclass
class DoorHandlers:
    reads: MeshReads
    writer: RunWriter
    approvers: Callable[[], frozenset[str]] = field(default=frozenset)
    files: Files | None = None  # files.stage and files.get; None: the verbs are unavailable
    clock: Callable[[], float] = time.time
    # Raises QuotaExceeded when the user may not start another run now (quota.py).
    room: Callable[[str], Awaitable[None]] | None = None
    reviews: SceneReviews | None = None  # scenes.changes, scenes.review
    # Projects, members and locks (services/doors/core/studio.py); None: scenes are their
    # owners' alone and the project and lock verbs are not offered.
    studio: Studio | None = None
    # Verbs answered elsewhere (render_verbs.py), by name.
    more: Mapping[str, Verb] = field(default_factory=dict)

    def table(self) -> dict[str, Verb]:
        """Verb -> handler: what a user's login may ask (``contracts.door.VERBS``)."""
        return {
            "run.submit": self.submit,
            "run.resolve": self.resolve,
            "run.cancel": self.cancel,
            "run.events": self.events,
            "run.audit": self.audit,
            "runs.list": self.runs,
            "scenes.list": self.scenes,
            "scenes.changes": self.changes,
            "scenes.review": self.review,
            "files.stage": self.stage,
            "files.get": self.file,
            **(StudioVerbs(self.studio).table() if self.studio is not None else {}),
            **self.more,
        }

    async def answer(self, user: UserEntry, verb: str, data: bytes) -> DoorReply:
        handler = self.table().get(verb)
        if handler is None:
            return refused(
                "NOT_FOUND", f"no verb {verb[:64]!r}; the door answers {', '.join(VERBS)}"
            )
        try:
            return await handler(user, data)
        except Refused as exc:
            return refused(exc.code, str(exc))
        except DoorUnavailable as exc:
            return refused("UNAVAILABLE", str(exc))

    async def _own_run(self, user: UserEntry, run_id: str) -> RunRequested:
        try:
            return ownership.own_run(await self.reads.requested(run_id), run_id, user.name)
        except ownership.NotOwned as exc:
            raise Refused("NOT_FOUND", str(exc)) from None

    async def _answerable(
        self, user: UserEntry, run_id: str, field: str, by: str, lead_of: str | None = None
    ) -> RunRequested:
        """The run's request, when ``user`` is the one its event names as ``field`` and
        may answer for the run (its user, an approver, or a lead of the scene's project);
        refused otherwise."""
        if by != user.name:
            raise Refused("FORBIDDEN", f"{field} is {by!r}, but this login is {user.name!r}")
        requested = await self.reads.requested(run_id)
        if requested is None:
            raise Refused("NOT_FOUND", f"no run {run_id}")
        if may_resolve(user.name, requested.user, self.approvers()) and (
            user.name != requested.user or lead_of is None or self.studio is None
        ):
            return requested
        if self.studio is not None:
            try:
                if await self.studio.answers_for(
                    requested.user, lead_of, requested.scene_id, user.name
                ):
                    return requested
            except Forbidden as exc:
                raise Refused("FORBIDDEN", str(exc)) from None
        raise Refused("NOT_FOUND", f"no run {run_id}")

    async def _may_start(self, user: UserEntry, scene_id: str) -> None:
        """Refuse a run on a scene the user does not reach (NOT_FOUND), only reads
        (FORBIDDEN) or another user has locked (CONFLICT)."""
        owner = await self.reads.scene_owner(scene_id)
        if owner is None:
            return  # a new scene
        if self.studio is None:
            if not ownership.owns(owner, user.name):
                raise Refused("NOT_FOUND", f"no scene {scene_id}")
            return
        try:
            await self.studio.scene_role(scene_id, user.name)
            await self.studio.may_start(scene_id, user.name)
        except ownership.NotOwned as exc:
            raise Refused("NOT_FOUND", str(exc)) from None
        except Forbidden as exc:
            raise Refused("FORBIDDEN", str(exc)) from None
        except SceneLocked as exc:
            raise Refused("CONFLICT", str(exc)) from None

    async def submit(self, user: UserEntry, data: bytes) -> DoorReply:
        try:
            event = decode_event(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise Refused("INVALID", f"not a run.requested event: {exc}") from None
        if not isinstance(event, RunRequested):
            raise Refused("INVALID", "run.submit takes a run.requested event")
        if event.user != user.name:
            log.warning("refused %r's request naming user %r", user.name, event.user)
            raise Refused(
                "FORBIDDEN",
                f"the request names user {event.user!r}, but this login is {user.name!r}",
            )
        # The limits the gateway's schema holds a request to, for every door.
        problem = request_problem(event, self.clock())
        if problem is not None:
            raise Refused("INVALID", problem)
        # Only the login's own run ids may be submitted, judged by their form alone, so the
        # answer is the same whether another user's run has the id or none does.
        own = run_prefix(user.name)
        if not event.run_id.startswith(own + "-"):
            raise Refused(
                "INVALID",
                f"run ids from this login begin with {own}- (run_prefix in its login file)",
            )
        if await self.reads.requested(event.run_id) is not None:
            raise Refused("CONFLICT", f"run {event.run_id} exists; pick a fresh run id")
        try:
            starter = await self.reads.thread_owner(event.thread_id)
            ownership.own_thread(starter, event.thread_id, user.name)
        except ownership.NotOwned as exc:
            raise Refused("NOT_FOUND", str(exc)) from None
        await self._may_start(user, event.scene_id)
        if event.origin is not None:
            event = await self._steered(user, event)
        if self.room is not None:
            try:
                await self.room(user.name)
            except QuotaExceeded as exc:
                raise Refused("UNAVAILABLE", str(exc)) from None
        # The door, not the client, says what host the request came through (spec 001).
        await self.writer.publish(msgspec.structs.replace(event, host=BUS))
        return DoorReply(ok=True, run_id=event.run_id)

    async def _steered(self, user: UserEntry, event: RunRequested) -> RunRequested:
        try:
            event = await steered(self.reads, user.name, event)
        except NoRun as exc:
            raise Refused("NOT_FOUND", str(exc)) from None
        except (SteerInvalid, ValueError) as exc:
            raise Refused("INVALID", str(exc)) from None
        except SteerRefused as exc:
            raise Refused("CONFLICT", str(exc)) from None
        problem = request_problem(event, self.clock())
        if problem is not None:
            raise Refused("INVALID", problem)
        return event

    async def resolve(self, user: UserEntry, data: bytes) -> DoorReply:
        event = _event(data, ApprovalResolved, "run.resolve", "run.approval_resolved")
        if event.resolved_by != user.name:
            await self._answerable(user, event.run_id, "resolved_by", event.resolved_by)
        pending = [
            e
            for e in await self.reads.events(event.run_id)
            if isinstance(e, ApprovalRequested) and e.approval_id == event.approval_id
        ]
        lead_of = pending[0].lead_of if pending else None
        requested = await self._answerable(
            user, event.run_id, "resolved_by", event.resolved_by, lead_of
        )
        if not pending:
            raise Refused("NOT_FOUND", f"no approval {event.approval_id} on run {event.run_id}")
        if event.user != requested.user:
            raise Refused("INVALID", f"user must be the run's user, {requested.user!r}")
        # The spec's alias is accepted; the log carries one name per decision.
        event = msgspec.structs.replace(event, decision=canonical_resolution(event.decision))
        await self.writer.publish(event)
        return DoorReply(ok=True, run_id=event.run_id)

    async def cancel(self, user: UserEntry, data: bytes) -> DoorReply:
        event = _event(data, CancelRequested, "run.cancel", "run.cancel_requested")
        await self._answerable(user, event.run_id, "cancelled_by", event.cancelled_by)
        try:
            # The door builds the event the log keeps (its id, its cause) from the run
            # itself: the client's copy names only the run, who asks and why.
            cancel = cancel_of(
                await self.reads.events(event.run_id), user.name, event.reason, self.clock()
            )
        except RunOver as exc:
            raise Refused("CONFLICT", str(exc)) from None
        await self.writer.publish(cancel)
        return DoorReply(ok=True, run_id=event.run_id)

    async def events(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, RunRef, '{"run_id": "run-1"}')
        await self._own_run(user, ref.run_id)
        events = [msgspec.to_builtins(e) for e in await self.reads.events(ref.run_id)]
        page, next_offset = pages.page(events, ref.offset, MAX_REPLY_BYTES)
        return DoorReply(ok=True, run_id=ref.run_id, events=page, next_offset=next_offset)

    async def audit(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, RunRef, '{"run_id": "run-1", "offset": 0}')
        await self._own_run(user, ref.run_id)
        # A run of the most operations a plan may hold has more records than one answer.
        records = await self.reads.audit_records(ref.run_id)
        page, next_offset = pages.page(records, ref.offset, MAX_REPLY_BYTES)
        return DoorReply(ok=True, run_id=ref.run_id, records=page, next_offset=next_offset)

    async def runs(self, user: UserEntry, data: bytes) -> DoorReply:
        query = _decode(data, ListQuery, f'{{"limit": {MAX_LIST}}}')
        return DoorReply(ok=True, runs=await self.reads.runs_of(user.name, query.limit))

    async def scenes(self, user: UserEntry, data: bytes) -> DoorReply:
        query = _decode(data, ListQuery, f'{{"limit": {MAX_LIST}}}')
        return DoorReply(ok=True, scenes=await self.reads.scenes_of(user.name, query.limit))

    def _reviews(self) -> SceneReviews:
        if self.reviews is None:
            raise DoorUnavailable("this door reads no change lists; ask the gateway instead")
        return self.reviews

    async def changes(self, user: UserEntry, data: bytes) -> DoorReply:
        query = _decode(data, ChangesQuery, '{"scene_id": "shot", "revision": 2}')
        try:
            listed = await self._reviews().changes(
                query.scene_id, user.name, query.base, query.revision
            )
        except NotTheirs as exc:
            raise Refused("NOT_FOUND", str(exc)) from None
        return DoorReply(ok=True, changes=to_data(listed))

    async def review(self, user: UserEntry, data: bytes) -> DoorReply:
        example = '{"scene_id": "shot", "revision": 2, "verdict": "approve", "note": ""}'
        ask = _decode(data, ReviewAsk, example)
        try:
            event = await self._reviews().review(
                ask.scene_id, user.name, ask.revision, ask.verdict, ask.note
            )
        except NotTheirs as exc:
            raise Refused("NOT_FOUND", str(exc)) from None
        except ReviewRefused as exc:
            raise Refused("INVALID", str(exc)) from None
        return DoorReply(ok=True, review=msgspec.to_builtins(event))

    def _files(self) -> Files:
        if self.files is None:
            raise DoorUnavailable("this door stages no files; ask the gateway instead")
        return self.files

    async def stage(self, user: UserEntry, data: bytes) -> DoorReply:
        upload = _decode(data, FileUpload, '{"data": "<base64 of the file>"}')
        try:
            raw = base64.b64decode(upload.data, validate=True)
        except (binascii.Error, ValueError):
            raise Refused("INVALID", "data is not base64; encode the file's bytes") from None
        if len(raw) > MAX_FILE_CHUNK:
            raise Refused(
                "INVALID",
                f"the file holds {len(raw)} bytes, more than the {MAX_FILE_CHUNK} one "
                "message takes; import a larger one through the gateway (POST "
                "/api/scenes/{sceneId}/assets)",
            )
        blob = await self._files().stage(user.name, raw)
        return DoorReply(ok=True, blob=blob, size=len(raw))

    async def file(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, FileRef, '{"blob": "sha256:<64 hex>", "offset": 0}')
        found = await self._files().get(user.name, ref.blob)
        if found is None:
            raise Refused(
                "NOT_FOUND", f"no file {ref.blob[:19]}… of yours: staged files last a day"
            )
        chunk = found[ref.offset : ref.offset + MAX_FILE_CHUNK]
        end = ref.offset + len(chunk)
        return DoorReply(
            ok=True,
            blob=ref.blob,
            size=len(found),
            data=base64.b64encode(chunk).decode(),
            next_offset=end if end < len(found) else None,
        )
