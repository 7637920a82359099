"""Revisions a user tagged to keep, in the KV bucket ``scene_tags``.

A tag is the key ``<scene>.<name>`` whose value names the revision, so one name points at
one revision of a scene, and tagging again moves it. Retention keeps every tagged revision
whatever its age (services/executor/domain/retention.py).
"""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError

from contracts.errors import BlendmeshError
from contracts.subjects import check_token
from services.runtime.kv_keys import live_keys
from services.runtime.streams import ensure_kv

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
        self._js = js
        self._prefix = prefix

    async def tag(self, scene_id: str, revision: int, name: str, by: str) -> None:
        check_token(scene_id, "scene id")
        check_token(name, "tag name")
        if revision < 1:
            raise ValueError(f"revision {revision} is no revision; revisions count from 1")
        kv = await ensure_kv(self._js, self._prefix, BUCKET)
        await kv.put(
            f"{scene_id}.{name}", msgspec.json.encode(RevisionTag(revision=revision, by=by))
        )

    async def untag(self, scene_id: str, name: str) -> bool:
        """Remove tag ``name``; False when the scene has no such tag."""
        check_token(scene_id, "scene id")
        check_token(name, "tag name")
        kv = await ensure_kv(self._js, self._prefix, BUCKET)
        try:
            await kv.get(f"{scene_id}.{name}")
        except (KeyNotFoundError, KeyDeletedError):
            return False
        await kv.purge(f"{scene_id}.{name}")
        return True

    async def of(self, scene_id: str) -> dict[str, int]:
        """Tag name -> revision, for one scene."""
        return (await self._all()).get(scene_id, {})

    async def kept(self) -> dict[str, set[int]]:
        """Scene -> its tagged revision numbers, for the collector."""
        return {scene: set(tags.values()) for scene, tags in (await self._all()).items()}

    async def _all(self) -> dict[str, dict[str, int]]:
        kv = await ensure_kv(self._js, self._prefix, BUCKET)
        keys = await live_keys(self._js, self._prefix, BUCKET)
        if len(keys) > MAX_TAGS:
            raise TooManyTags(f"{len(keys)} tags, more than the {MAX_TAGS} retention reads")
        found: dict[str, dict[str, int]] = {}
        for key in keys:
            try:
                entry = await kv.get(key)
            except (KeyNotFoundError, KeyDeletedError):
                continue
            scene, _, name = key.partition(".")
            tag = msgspec.json.decode(entry.value or b"", type=RevisionTag)
            found.setdefault(scene, {})[name] = tag.revision
        return found
