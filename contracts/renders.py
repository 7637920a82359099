"""A render job: which frames of which committed revision, how, and what it costs.

Every door parses a person's words (``--frames 1-240 --size 32x32``) with the functions
here, so each refuses the same input with the same message. The bounds are hard limits of
the contract; how much of them one user may spend is the doors' quota (``RenderQuota``).
A frame is a work item on the render queue (``FrameTask``), taken by any executor.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated, Literal

import msgspec

from contracts.errors import BlendmeshError

Engine = Literal["cycles", "eevee", "workbench"]
ENGINES: tuple[Engine, ...] = ("cycles", "eevee", "workbench")
# What Blender 5.0 calls each engine (``scene.render.engine``).
BLENDER_ENGINE: dict[Engine, str] = {
    "cycles": "CYCLES",
    "eevee": "BLENDER_EEVEE",
    "workbench": "BLENDER_WORKBENCH",
}
MAX_FRAME = 1_048_574  # Blender's own last frame (MAXFRAME)
MAX_JOB_FRAMES = 10_000  # the work queue holds at most this many frames of one job
MAX_SIDE = 8192
MIN_SIDE = 16
MAX_SAMPLES = 4096
# What one user's render job may cost, and their jobs under way at once, unless the
# doors' and executors' settings say otherwise (docs/renders.md): 240 frames of 1920x1080
# at 64 samples and a little room, and four such jobs.
DEFAULT_JOB_COST = 32_000_000_000
DEFAULT_COST_AT_ONCE = 4 * DEFAULT_JOB_COST
# The PNG of one frame, at most: 8192 x 8192 RGBA at 8 bits, uncompressed, and headers.
MAX_FRAME_BYTES = 8192 * 8192 * 4 + 1024 * 1024

FrameNumber = Annotated[int, msgspec.Meta(ge=0, le=MAX_FRAME)]
Side = Annotated[int, msgspec.Meta(ge=MIN_SIDE, le=MAX_SIDE)]
Samples = Annotated[int, msgspec.Meta(ge=1, le=MAX_SAMPLES)]
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]

_RANGE = re.compile(r"^\s*(-?\d{1,12})\s*(?:-\s*(-?\d{1,12})\s*)?$")
_SIZE = re.compile(r"^\s*(\d{1,12})\s*[xX]\s*(\d{1,12})\s*$")


class RenderRefused(BlendmeshError, ValueError):
    """A render request the contract refuses; the message names what and what to do."""


class RenderSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What to render: frames ``first``..``last`` (both included) of the scene's camera."""

    first: FrameNumber
    last: FrameNumber
    engine: Engine = "cycles"
    samples: Samples = 16
    width: Side = 640
    height: Side = 360

    @property
    def frames(self) -> range:
        return range(self.first, self.last + 1)

    @property
    def cost(self) -> int:
        """Frames x samples x pixels: what a job spends of its user's render budget."""
        return len(self.frames) * self.samples * self.width * self.height


def parse_frames(text: str) -> tuple[int, int]:
    """``"1-240"`` or ``"7"`` as ``(first, last)``; refused when not a range of frames."""
    found = _RANGE.match(text)
    if found is None:
        raise RenderRefused(
            f"frames {text[:40]!r} are not a range: write FIRST-LAST (e.g. 1-240) or one frame"
        )
    first = int(found[1])
    last = int(found[2]) if found[2] is not None else first
    return first, last


def parse_size(text: str) -> tuple[int, int]:
    """``"1920x1080"`` as ``(width, height)``."""
    found = _SIZE.match(text)
    if found is None:
        raise RenderRefused(f"size {text[:40]!r} is not WIDTHxHEIGHT in pixels (e.g. 640x360)")
    return int(found[1]), int(found[2])


def spec_of(
    first: int, last: int, engine: str, samples: int, width: int, height: int
) -> RenderSpec:
    """A checked RenderSpec; every problem is refused by name, with what would do."""
    if first < 0 or last < 0:
        raise RenderRefused(f"frames {first}-{last}: frames are 0 or more")
    if last < first:
        raise RenderRefused(f"frames {first}-{last} run backwards: write the first frame first")
    if last > MAX_FRAME:
        raise RenderRefused(f"frame {last} is past Blender's last frame, {MAX_FRAME}")
    if last - first + 1 > MAX_JOB_FRAMES:
        raise RenderRefused(
            f"frames {first}-{last} are {last - first + 1} frames; one job renders at most "
            f"{MAX_JOB_FRAMES}: split it into several jobs"
        )
    if engine not in ENGINES:
        raise RenderRefused(f"engine {engine[:40]!r} is unknown: use one of {', '.join(ENGINES)}")
    if not 1 <= samples <= MAX_SAMPLES:
        raise RenderRefused(f"samples {samples}: use 1 to {MAX_SAMPLES}")
    for side, value in (("width", width), ("height", height)):
        if not MIN_SIDE <= value <= MAX_SIDE:
            raise RenderRefused(f"{side} {value}: use {MIN_SIDE} to {MAX_SIDE} pixels")
    return RenderSpec(
        first=first,
        last=last,
        engine=engine,
        samples=samples,
        width=width,
        height=height,
    )


class FrameTask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One frame of a job on the render queue: all an executor needs to render it."""

    job_id: str
    user: str
    scene_id: str
    revision: int
    frame: FrameNumber
    spec: RenderSpec
    request_event_id: str  # the job's render_requested event: what its frames follow


def frame_object(user: str, png: bytes) -> tuple[str, str]:
    """``(sha256, object name)`` of a frame's PNG in the renders store: by content and
    per user, so a frame stored twice is one object and no user reads another's."""
    digest = hashlib.sha256(png).hexdigest()
    return digest, f"{user}/{digest}.png"


_decode_task = msgspec.json.Decoder(FrameTask)


def encode_task(task: FrameTask) -> bytes:
    return msgspec.json.encode(task)


def decode_task(data: bytes) -> FrameTask:
    return _decode_task.decode(data)


class FrameParams(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``blendmesh/scene.render_frame``: one frame of the loaded scene, as a PNG at
    ``path``, through the scene's camera (or one framing it, when it has none)."""

    path: Annotated[str, msgspec.Meta(min_length=1)]
    frame: FrameNumber
    spec: RenderSpec


class FrameImage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A rendered frame: where its PNG is, and Blender's time for it."""

    path: str
    frame: int
    engine: str
    ms: float
