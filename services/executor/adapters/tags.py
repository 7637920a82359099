"""Revisions a user tagged to keep, in the KV bucket ``scene_tags``.

A tag is the key ``<scene>.<name>`` whose value names the revision, so one name points at
one revision of a scene, and tagging again moves it. Retention keeps every tagged revision
whatever its age (services/executor/domain/retention.py).
"""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext

from contracts.errors import BlendmeshError
from contracts.subjects import check_token
from services.runtime.nats.kv import KvTooManyKeys, TypedKv

BUCKET = "scene_tags"
MAX_TAGS = 10_000  # tags the collector reads at most; past it, it keeps everything


class RevisionTag(msgspec.Struct, frozen=True, kw_only=True):
    """One tag: which revision it keeps and who set it."""

    revision: int
    by: str


class TooManyTags(BlendmeshError, RuntimeError):
    """More tags than the collector reads: it collects no revision rather than guess."""


class KvSceneTags:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._table = TypedKv(js, prefix, BUCKET, RevisionTag)

    async def tag(self, scene_id: str, revision: int, name: str, by: str) -> None:
        check_token(scene_id, "scene id")
        check_token(name, "tag name")
        if revision < 1:
            raise ValueError(f"revision {revision} is no revision; revisions count from 1")
        await self._table.put(f"{scene_id}.{name}", RevisionTag(revision=revision, by=by))

    async def untag(self, scene_id: str, name: str) -> bool:
        """Remove tag ``name``; False when the scene has no such tag."""
        check_token(scene_id, "scene id")
        check_token(name, "tag name")
        if await self._table.revision(f"{scene_id}.{name}") is None:
            return False
        await self._table.purge(f"{scene_id}.{name}")
        return True

    async def of(self, scene_id: str) -> dict[str, int]:
        """Tag name -> revision, for one scene."""
        # Only this scene's tags are read; its ids have no '.', which ends its part of a key.
        return (await self._all(f"{scene_id}.")).get(scene_id, {})

    async def kept(self) -> dict[str, set[int]]:
        """Scene -> its tagged revision numbers, for the collector."""
        return {scene: set(tags.values()) for scene, tags in (await self._all()).items()}

    async def _all(self, starts_with: str = "") -> dict[str, dict[str, int]]:
        try:
            keys = await self._table.keys(starts_with, limit=MAX_TAGS)
        except KvTooManyKeys as exc:
            raise TooManyTags(
                f"{exc.count} tags, more than the {MAX_TAGS} retention reads"
            ) from None
        found: dict[str, dict[str, int]] = {}
        for key in keys:
            tag = await self._table.get(key)
            if tag is None:  # untagged since the listing
                continue
            scene, _, name = key.partition(".")
            found.setdefault(scene, {})[name] = tag.value.revision
        return found
