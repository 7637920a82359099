"""The door's render verbs (docs/renders.md, docs/bus.md): ``render.submit``,
``render.show``, ``render.cancel`` and ``render.frame``, each for the asking login alone.

Another user's scene or job answers NOT_FOUND, like one that does not exist; what the
render contract refuses answers INVALID with its words, the render budget FORBIDDEN.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from contracts.door import MAX_FILE_CHUNK, DoorError, DoorReply, ErrorCode, JobRef, RenderAsk
from contracts.render_fold import RenderJob
from contracts.renders import RenderRefused, parse_frames, parse_size, spec_of
from services.doors.bus.ports import RenderJobs
from services.doors.core.client import ClientError
from services.doors.core.ownership import NotOwned
from services.doors.core.renders import RenderQuotaExceeded
from services.runtime.server.identity import UserEntry

Verb = Callable[[UserEntry, bytes], Awaitable[DoorReply]]


def _refused(code: ErrorCode, message: str) -> DoorReply:
    return DoorReply(ok=False, error=DoorError(code=code, message=message))


@dataclass
class RenderVerbs:
    jobs: RenderJobs

    def table(self) -> dict[str, Verb]:
        return {
            "render.submit": self._guarded(self.submit),
            "render.show": self._guarded(self.show),
            "render.cancel": self._guarded(self.cancel),
            "render.frame": self._guarded(self.frame),
        }

    @staticmethod
    def _guarded(verb: Verb) -> Verb:
        async def answer(user: UserEntry, data: bytes) -> DoorReply:
            try:
                return await verb(user, data)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                return _refused("INVALID", f"{exc}; docs/bus.md shows what the verb takes")
            except RenderRefused as exc:
                return _refused("INVALID", str(exc))
            except NotOwned as exc:
                return _refused("NOT_FOUND", str(exc))
            except RenderQuotaExceeded as exc:
                return _refused("FORBIDDEN", str(exc))
            except ClientError as exc:  # a revision the scene has not, a job that ended
                return _refused("CONFLICT", str(exc))

        return answer

    async def submit(self, user: UserEntry, data: bytes) -> DoorReply:
        ask = msgspec.json.decode(data or b"{}", type=RenderAsk)
        first, last = parse_frames(ask.frames)
        width, height = parse_size(ask.size)
        spec = spec_of(first, last, ask.engine, ask.samples, width, height)
        job = await self.jobs.request(user.name, ask.scene_id, ask.revision, spec)
        return _reply(job)

    async def show(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = msgspec.json.decode(data or b"{}", type=JobRef)
        return _reply(await self.jobs.job(ref.job_id, user.name))

    async def cancel(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = msgspec.json.decode(data or b"{}", type=JobRef)
        return _reply(await self.jobs.cancel(ref.job_id, user.name))

    async def frame(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = msgspec.json.decode(data or b"{}", type=JobRef)
        if ref.frame is None:
            return _refused("INVALID", 'render.frame takes {"job_id": "...", "frame": N}')
        png = await self.jobs.frame(ref.job_id, ref.frame, user.name)
        chunk = png[ref.offset : ref.offset + MAX_FILE_CHUNK]
        end = ref.offset + len(chunk)
        return DoorReply(
            ok=True,
            run_id=ref.job_id,
            size=len(png),
            data=base64.b64encode(chunk).decode(),
            next_offset=end if end < len(png) else None,
        )


def _reply(job: RenderJob) -> DoorReply:
    return DoorReply(ok=True, run_id=job.job_id, job=msgspec.to_builtins(job))
