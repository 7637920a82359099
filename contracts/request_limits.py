"""What a run request may hold, whichever door it came through.

The gateway's schema refuses a prompt over ``MAX_PROMPT`` characters and ids that are not
tokens; the bus door took what a client sent, so a 900 KB prompt, a 200 KB id and an
``at`` of 1e300 entered the log, and the audit could no longer send that user's run list
(each answer over a message's size). ``request_problem`` is the one check both doors make.
"""

from __future__ import annotations

import math
import re

from contracts.events import RunRequested

MAX_PROMPT = 4000  # characters of a request in words
MAX_ID = 128  # characters of any id a request names
# How far a request's own clock may be from the door's: a client with a wrong clock is
# told so, and the log's times stay readable.
MAX_CLOCK_SKEW = 24 * 3600.0
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,128}")


def request_problem(event: RunRequested, now: float) -> str | None:
    """Why ``event`` must not enter the mesh, naming the field and the limit; None when it
    may."""
    for name in ("run_id", "thread_id", "scene_id"):
        value = getattr(event, name)
        if not _TOKEN.fullmatch(value):
            return f"{name} must be 1 to {MAX_ID} letters, digits, '_' or '-'"
    for name in ("event_id", "request_id", "causation_id", "user", "planner"):
        value = getattr(event, name)
        if value is not None and not 1 <= len(value) <= MAX_ID:
            return f"{name} must be 1 to {MAX_ID} characters"
    if event.prompt is not None and not 1 <= len(event.prompt) <= MAX_PROMPT:
        return (
            f"the prompt has {len(event.prompt):,} characters; a request in words may have "
            f"1 to {MAX_PROMPT}: say less, or send a plan"
        )
    if not math.isfinite(event.at) or abs(event.at - now) > MAX_CLOCK_SKEW:
        return (
            "'at' is more than a day from the door's clock; send the time the request is "
            "made, in seconds since 1970 (UTC)"
        )
    return None
