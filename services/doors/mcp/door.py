"""What the MCP tools do on the mesh, for one user: submit runs, read runs and scenes.

Ownership is the rule every door applies (``services/doors/core/ownership.py``): a run is its
requester's, a scene its recorded owner's, and anything not the caller's raises
``NotOwned``, answered exactly like something unknown, so ids cannot be probed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import msgspec
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.events import RunRequested, decode_event
from contracts.queries import MAX_RUNS
from contracts.session import MCP_STDIO, HostProfile
from services.audit import client as audit
from services.doors.core import pages
from services.doors.core.client import MeshClient
from services.doors.core.ownership import NotOwned, Owners, own_thread
from services.doors.core.run_view import RunView
from services.doors.core.studio import Forbidden, SceneLocked, Studio, visible_heads
from services.doors.mcp.errors import (
    Conflicted,
    NotFound,
    PolicyRefused,
    Unavailable,
    ValidationError,
)
from services.doors.mcp.sealed import Sealer
from services.executor.client import KvCatalog, KvNodeCatalog, KvSceneSummaries, SceneFiles
from services.runtime.nats.retry import poll
from services.runtime.service.host import Bus
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings

# Paths on the mesh's host say nothing a remote caller may know.
HIDDEN = ("blend_path",)
# What one answer of the ``audit`` tool holds at most, as JSON: a host reads it whole into
# its context, and a run of the most operations has some 1.3 MB of trail (ADR 0076).
AUDIT_PAGE_BYTES = 128 * 1024
AUDIT_VIEWS = ("actions", "audit_records", "timeline")


def check(arguments: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` when they match ``schema``; a message naming the field, never its value."""
    if not isinstance(arguments, dict):
        raise ValidationError("arguments must be a JSON object")
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(arguments)
    )
    if error is not None:
        where = "".join(f".{p}" for p in error.absolute_path) or " (the arguments)"
        if error.validator == "additionalProperties":
            allowed = ", ".join(schema.get("properties", {}))
            raise ValidationError(f"unknown argument; this tool takes: {allowed}")
        if error.validator == "required":
            raise ValidationError(f"missing argument: {error.message.split(chr(39))[1]}")
        raise ValidationError(f"argument{where} does not match its schema ({error.validator})")
    return arguments


def plain(value: Any) -> dict[str, Any]:
    """A msgspec value as JSON-ready builtins, without the mesh host's paths."""
    data: dict[str, Any] = msgspec.to_builtins(value)
    for key in HIDDEN:
        data.pop(key, None)
    return data


@dataclass
class Door:
    """The mesh as the MCP tools see it."""

    settings: Settings
    bus: Bus
    client: MeshClient
    run_timeout: float = 600.0
    host: HostProfile = MCP_STDIO  # the spec 001 host profile its requests declare
    sealer: Sealer = field(default_factory=Sealer.fresh)  # approval cards' seals

    @property
    def prefix(self) -> str:
        return self.bus.prefix

    @property
    def owners(self) -> Owners:
        return Owners(self.client, SceneFiles(self.bus.js, self.prefix), projects_of(self.bus))

    async def own_run(self, run_id: str, user: str) -> RunRequested:
        return await self.owners.run(run_id, user)

    async def owns_scene(self, scene_id: str, user: str) -> bool:
        """Only the owner of a scene's first revision sees it; naming it never grants it."""
        try:
            await self.owners.scene(scene_id, user)
        except NotOwned:
            return False
        return True

    async def own_scene(self, scene_id: str, user: str) -> None:
        await self.owners.scene(scene_id, user)

    async def may_start(self, scene_id: str, user: str) -> None:
        """Refuse a viewer's run, or one on a scene another user has locked, before it
        starts (services/doors/core/studio.py)."""
        studio = Studio(
            projects_of(self.bus), SceneFiles(self.bus.js, self.prefix), self.bus.publisher
        )
        try:
            await studio.may_start(scene_id, user)
        except NotOwned as exc:
            raise NotFound(str(exc)) from None
        except Forbidden as exc:
            raise PolicyRefused(str(exc)) from None
        except SceneLocked as exc:
            raise Conflicted(str(exc)) from None

    async def check_thread(self, thread_id: str, user: str) -> None:
        """A thread is continued only by the user whose run started it."""
        starter = None
        with contextlib.suppress(NotFoundError):
            msg = await self.bus.js.get_msg(
                subjects.stream_name(self.prefix),
                seq=1,
                subject=subjects.thread_events(self.prefix, thread_id),
                next=True,
            )
            first = decode_event(msg.data or b"")
            run_id = getattr(first, "run_id", "")
            started = await self.client.requested(run_id) if run_id else None
            starter = started.user if started is not None else None
        own_thread(starter, thread_id, user)

    async def status(self, run_id: str, user: str) -> RunView:
        """The user's run as its events fold today."""
        await self.own_run(run_id, user)
        view = await self.client.view(run_id)
        if view is None:
            raise NotFound(f"no run {run_id}")
        return view

    async def runs(self, user: str, limit: int) -> list[dict[str, Any]]:
        rows = await ask(
            audit.query_runs(self.bus.nc, self.prefix, limit=min(limit, MAX_RUNS), user=user)
        )
        return [plain(row) for row in rows]

    async def audit(self, run_id: str, user: str, offset: int = 0) -> dict[str, Any]:
        """One page of the user's run's trail from row ``offset`` (actions, then audit
        records, then timeline), at most ``AUDIT_PAGE_BYTES`` of them."""
        await self.own_run(run_id, user)
        detail = await ask(audit.query_run(self.bus.nc, self.prefix, run_id))
        rows = [
            (view, plain(row))
            for view, found in (
                ("actions", detail.actions),
                ("audit_records", detail.audit_records),
                ("timeline", detail.timeline),
            )
            for row in found
        ]
        kept, next_offset = pages.page([row for _, row in rows], offset, AUDIT_PAGE_BYTES)
        shown = rows[offset : offset + len(kept)]
        return {
            "run": plain(detail.run),
            **{view: [row for at, row in shown if at == view] for view in AUDIT_VIEWS},
            "offset": offset,
            "next_offset": next_offset,
            "rows": len(rows),
        }

    async def scene(self, scene_id: str, user: str) -> dict[str, Any] | None:
        """The scene's head and summary when it is the user's; None otherwise."""
        try:
            head = await self.owners.scene(scene_id, user)
        except NotOwned:
            return None
        summary = await KvSceneSummaries(self.bus.js, self.prefix).get(scene_id)
        answer: dict[str, Any] = {
            "scene_id": scene_id,
            "revision": head.revision,
            "scene_hash": head.scene_hash,
        }
        if summary is not None and summary.scene_hash == head.scene_hash:
            answer["objects"] = plain(summary)["objects"]
            answer["materials"] = plain(summary)["materials"]
        return answer

    async def scenes(self, user: str, limit: int) -> list[dict[str, Any]]:
        """The user's scenes with their head revisions."""
        files = SceneFiles(self.bus.js, self.prefix)
        heads = await visible_heads(files, await projects_of(self.bus).current(), user, limit)
        return [
            {"scene_id": h.scene_id, "revision": h.revision, "scene_hash": h.scene_hash}
            for h in heads
        ]

    async def scene_history(self, scene_id: str, user: str) -> list[dict[str, Any]] | None:
        """Every revision of the user's scene, oldest first; None when it is not theirs."""
        if not await self.owns_scene(scene_id, user):
            return None
        revisions = await SceneFiles(self.bus.js, self.prefix).history(scene_id)
        return [{"revision": n, "scene_hash_prefix": d} for n, d in revisions]

    async def preview(self, scene_id: str, user: str) -> bytes | None:
        if not await self.owns_scene(scene_id, user):
            return None
        return await SceneFiles(self.bus.js, self.prefix).preview(scene_id)

    async def fresh_preview(
        self, scene_id: str, user: str, stale: bytes | None, wait: float = 5.0
    ) -> bytes | None:
        """The preview rendered after a commit: the executor renders it once the run's result
        is out, so wait (a little) for one that differs from the ``stale`` one."""

        async def look() -> bytes | None:
            return await self.preview(scene_id, user)

        return await poll(look, lambda png: png is not None and png != stale, wait, pause=0.1)

    async def inspection(self, scene_id: str, user: str) -> bytes:
        await self.own_scene(scene_id, user)
        found = await SceneFiles(self.bus.js, self.prefix).revision_inspection(scene_id)
        if found is None:
            raise NotFound(f"scene {scene_id} has no inspection artifact yet")
        return found[1]

    async def catalog(self) -> bytes:
        found = await KvCatalog(self.bus.js, self.prefix).get()
        if found is None:
            raise Unavailable("no executor has published its tool catalog yet; retry shortly")
        return msgspec.json.encode(found)

    async def nodes(self) -> bytes:
        found = await KvNodeCatalog(self.bus.js, self.prefix).get()
        if found is None:
            raise Unavailable("no executor has published its node catalog yet; retry shortly")
        return msgspec.json.encode(found)


async def ask(query: Any) -> Any:
    """An audit query; its failures are the mesh's, never the caller's."""
    try:
        return await query
    except audit.AuditClientError:
        raise Unavailable("the audit service could not answer; retry when it is up") from None
