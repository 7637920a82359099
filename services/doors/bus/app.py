"""Composition root of the bus door: the registry, the reads, the responder and the feed.

Each request arrives on ``<prefix>.api.<user>.<verb>``, in queue group ``door``. The
server lets only that user's login publish there, so the subject is the asker's identity
(docs/adr/0015). The door answers only into that login's own inbox, so a request cannot
aim the door's answer at a service, and it never answers a stream's delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from contracts import subjects
from contracts.changes import ChangeList
from contracts.door import DoorReply
from contracts.events import AnyEvent, ApprovalResolved, CancelRequested, RunRequested
from contracts.reviews import RevisionReviewed
from services.audit import client as audit
from services.doors.bus.feed import Feed
from services.doors.bus.handlers import MAX_REPLY_BYTES, DoorHandlers, refused
from services.doors.bus.ports import DoorUnavailable, NotTheirs
from services.doors.bus.render_verbs import RenderVerbs
from services.doors.core.client import MeshClient
from services.doors.core.fairness import Fairness, Limits
from services.doors.core.quota import RunQuota
from services.doors.core.renders import MeshRenderJobs, RenderQuota
from services.doors.core.reviews import NoRevision, Revisions
from services.doors.core.scene_client import NoScene
from services.doors.core.studio import Studio
from services.executor.client import ObjectStoreUploads, RenderFrames, SceneFiles
from services.runtime.nats import access, delivered
from services.runtime.nats.history import read_run
from services.runtime.nats.quorum import JetStreamUnavailable
from services.runtime.server import suspensions
from services.runtime.server.users import FILE_NAME, UsersFile, UsersFileError
from services.runtime.service import health
from services.runtime.service.host import Bus, never
from services.runtime.service.owners import IndexBehind, LogOwners
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings

log = logging.getLogger("blendmesh.door")
QUEUE = "door"
MAX_IN_FLIGHT = 64  # requests answered at once; more wait for a slot
MAX_QUEUED = 512  # requests held at all, answered or waiting; more are refused at once
_encoder = msgspec.json.Encoder()
BUSY = f"the door holds {MAX_QUEUED} requests already; try again in a moment"
TOO_BIG = (
    f"the answer would be larger than {MAX_REPLY_BYTES} bytes, more than one message "
    "holds; ask for fewer (limit, offset)"
)


class BusReads:
    """The door's reads: the log by direct get, the audit views by query, scene heads."""

    def __init__(self, bus: Bus, owners: LogOwners) -> None:
        self._bus = bus
        self._client = MeshClient(bus)
        self._scenes = SceneFiles(bus.js, bus.prefix)
        self._owners = owners

    async def requested(self, run_id: str) -> RunRequested | None:
        return await self._client.requested(run_id)

    async def events(self, run_id: str) -> Sequence[AnyEvent]:
        return await read_run(self._bus.js, self._bus.prefix, run_id)

    async def thread_owner(self, thread_id: str) -> str | None:
        try:
            index = await self._owners.current()
        except IndexBehind as exc:
            raise DoorUnavailable(str(exc)) from None
        return index.threads.get(thread_id)

    async def scene_owner(self, scene_id: str) -> str | None:
        return await self._scenes.owner(scene_id)

    async def scene_head(self, scene_id: str) -> int | None:
        head = await self._scenes.head(scene_id)
        return head.revision if head is not None else None

    async def scene_history(self, scene_id: str) -> list[tuple[int, str]]:
        return await self._scenes.history(scene_id)

    async def audit_records(self, run_id: str) -> list[dict[str, Any]]:
        try:
            detail = await audit.query_run(self._bus.nc, self._bus.prefix, run_id)
        except audit.AuditClientError as exc:
            raise DoorUnavailable(f"the audit service: {exc}") from None
        return [msgspec.to_builtins(r) for r in detail.audit_records]

    async def runs_of(self, user: str, limit: int) -> list[dict[str, Any]]:
        try:
            rows = await audit.query_runs(self._bus.nc, self._bus.prefix, limit, user=user)
        except audit.AuditClientError as exc:
            raise DoorUnavailable(f"the audit service: {exc}") from None
        # Where the home keeps a scene's file is the host's business, not the user's.
        return [
            {k: v for k, v in msgspec.to_builtins(r).items() if k != "blend_path"} for r in rows
        ]

    async def scenes_of(self, user: str, limit: int) -> list[dict[str, Any]]:
        book = await projects_of(self._bus).current()
        owned = [
            h for h in await self._scenes.scenes_of(user, limit) if h.scene_id not in book.filed
        ]
        # A filed scene is listed to every member of its project, its owner included.
        filed = sorted(s for p in book.visible(user) for s in p.scenes)[: limit - len(owned)]
        heads = [*owned, *[h for h in [await self._scenes.head(s) for s in filed] if h]]
        return [
            {"scene_id": h.scene_id, "revision": h.revision, "scene_hash": h.scene_hash}
            for h in heads
        ]


@dataclass(frozen=True)
class Suspension:
    """Where the door suspends a flooding login, and for how long."""

    path: Path
    seconds: int

    async def apply(self, token: str, registry: UsersFile) -> None:
        user = await asyncio.to_thread(registry.by_token, token)
        if user is None:
            return
        until = await asyncio.to_thread(
            suspensions.suspend, self.path, user.name, self.seconds, time.time()
        )
        delivered.log.warning(
            "door: suspended %r for %d s (until %s): it sent far more than its share "
            "(BLENDMESH_USER_SUSPEND_SECONDS)",
            user.name,
            self.seconds,
            time.strftime("%H:%M:%S", time.localtime(until)),
        )


class BusReviews:
    """The doors' change lists and reviews, their refusals in the door's words."""

    def __init__(self, bus: Bus, approvers: Callable[[], frozenset[str]]) -> None:
        self._revisions = Revisions.of(bus, approvers)

    async def changes(
        self, scene_id: str, user: str, base: int | None, revision: int | None
    ) -> ChangeList:
        try:
            return await self._revisions.changes(scene_id, user, base, revision)
        except (NoScene, NoRevision) as exc:
            raise NotTheirs(str(exc)) from None

    async def review(
        self, scene_id: str, user: str, revision: int, verdict: str, note: str
    ) -> RevisionReviewed:
        try:
            return await self._revisions.review(scene_id, user, revision, verdict, note)
        except (NoScene, NoRevision) as exc:
            raise NotTheirs(str(exc)) from None


class LogWriter:
    def __init__(self, bus: Bus) -> None:
        self._bus = bus

    async def publish(self, event: RunRequested | ApprovalResolved | CancelRequested) -> int:
        return await self._bus.publisher.publish(event)


class DoorService:
    name = "door"

    def __init__(
        self,
        bus: Bus,
        handlers: DoorHandlers,
        users: UsersFile,
        feed: Feed,
        owners: LogOwners,
        fairness: Fairness,
        suspension: Suspension | None = None,
    ) -> None:
        self._owners = owners
        self._fairness = fairness
        self._suspension = suspension
        self._suspended: set[str] = set()  # logins suspended lately (by subject token)
        self._suspending: set[asyncio.Task[None]] = set()
        self._bus = bus
        self._handlers = handlers
        self._users = users
        self._feed = feed
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.registration: health.Registration | None = None

    async def start(self) -> None:
        await self._feed.start()
        self._sub = await self._bus.nc.subscribe(
            subjects.any_door_api(self._bus.prefix), queue=QUEUE, cb=self._on_request
        )

    async def stop(self) -> None:
        if self.registration is not None:
            await self.registration.stop()
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        await self._feed.stop()
        await self._owners.close()
        tasks = [*self._tasks, *self._suspending]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def failed(self) -> BaseException:
        """Never: its subscriptions live as long as its connection, which reconnects."""
        return await never()

    async def _on_request(self, msg: Msg) -> None:
        asked = subjects.door_request(self._bus.prefix, msg.subject)
        if asked is None or delivered.from_stream(msg.reply, msg.headers):
            return  # not a request of a user's login: nothing to answer
        token, verb = asked
        inbox = f"{access.INBOX_USERS}.{token}."
        if not msg.reply.startswith(inbox):
            # Answering elsewhere would let a user aim the door's words at a service.
            delivered.log.warning(
                "door: ignored a request on %s whose reply %s is not the asker's inbox",
                msg.subject[:200],
                msg.reply[:200],
            )
            return
        if token in self._suspended:
            return  # shut out at the server; what it sent before is dropped unread
        # Refused here, before a task holds the request: one user's flood is answered as
        # fast as it arrives and costs the others nothing but these few checks.
        if len(self._tasks) >= MAX_QUEUED:
            await self._send(msg, refused("UNAVAILABLE", BUSY))
            return
        refusal = self._fairness.admit(token, len(msg.data))
        if refusal is not None:
            if refusal.told:  # past as many refusals a second as requests: left unanswered
                await self._send(msg, refused("UNAVAILABLE", refusal.message))
            elif refusal.flooding:
                self._suspend(token)
            return
        task = asyncio.create_task(self._respond(msg, token, verb))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _suspend(self, token: str) -> None:
        """Have the server shut out a login that floods the door (suspensions.py)."""
        if self._suspension is None or token in self._suspended:
            return
        self._suspended.add(token)
        task = asyncio.create_task(self._suspension.apply(token, self._users))
        self._suspending.add(task)
        task.add_done_callback(self._suspending.discard)
        asyncio.get_running_loop().call_later(
            self._suspension.seconds, self._suspended.discard, token
        )

    async def _respond(self, msg: Msg, token: str, verb: str) -> None:
        try:
            async with self._slots:
                reply = await self._answer(token, verb, msg.data)
        finally:
            self._fairness.done(token)
        await self._send(msg, reply)

    @staticmethod
    async def _send(msg: Msg, reply: DoorReply) -> None:
        encoded = _encoder.encode(reply)
        if len(encoded) > MAX_REPLY_BYTES:  # the asker hears that, not a silence
            encoded = _encoder.encode(refused("UNAVAILABLE", TOO_BIG))
        with contextlib.suppress(Exception):
            await msg.respond(encoded)

    async def _answer(self, token: str, verb: str, data: bytes) -> DoorReply:
        try:
            user = await asyncio.to_thread(self._users.by_token, token)
        except UsersFileError as exc:
            log.error("door: %s", exc)
            return refused("UNAVAILABLE", "the mesh's user registry is broken; tell its operator")
        if user is None:
            return refused("FORBIDDEN", "this login is not a registered user any more")
        try:
            return await self._handlers.answer(user, verb, data)
        except JetStreamUnavailable as exc:
            return refused("UNAVAILABLE", str(exc))
        except (NoRespondersError, NatsTimeoutError) as exc:
            return refused("UNAVAILABLE", f"the mesh did not answer in time ({exc!r}); try again")
        except Exception:
            log.exception("door: %s for %s failed", verb, user.name)
            return refused("UNAVAILABLE", "the door failed on this request; see the door's log")


async def start(settings: Settings, bus: Bus) -> DoorService:
    users = UsersFile(settings.home / FILE_NAME)
    owners = LogOwners(bus)
    reads = BusReads(bus, owners)
    handlers = DoorHandlers(
        reads=reads,
        writer=LogWriter(bus),
        approvers=users.approvers,
        files=ObjectStoreUploads(bus.js, bus.prefix),
        room=partial(RunQuota.from_env(settings.env).check, bus.nc, bus.prefix),
        reviews=BusReviews(bus, users.approvers),
        studio=Studio(projects_of(bus), SceneFiles(bus.js, bus.prefix), bus.publisher),
        more=RenderVerbs(
            MeshRenderJobs(
                MeshClient(bus),
                SceneFiles(bus.js, bus.prefix),
                RenderFrames(bus.js, bus.prefix),
                RenderQuota.from_env(settings.env),
            )
        ).table(),
    )
    fairness = Fairness(Limits.from_env(settings.env), time.monotonic)
    seconds = suspensions.seconds_from(settings.env)
    suspension = Suspension(settings.home / suspensions.FILE_NAME, seconds) if seconds else None
    service = DoorService(
        bus, handlers, users, Feed(bus, reads.requested), owners, fairness, suspension
    )
    await service.start()
    try:
        service.registration = await health.register(bus, access.DOOR)  # no durable of its own
    except BaseException:
        await service.stop()
        raise
    return service
