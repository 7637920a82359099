"""Logins suspended for flooding: which users the server admits no more, and until when.

A door can refuse a request only after reading it, and a login that publishes faster than
the door reads (160,000 small requests a second, measured) stalls everyone's requests
behind its own. nats-server has no per-user rate limit, but it does reload its
authorization (``user_registry.py``) and closes the connections of a key it no longer
admits. So a door that sees a login flood far past its share suspends it here, in
``suspended.json`` beside the users registry: the embedded server leaves that user's keys
out until the time given, and admits them again afterwards by itself.

The file is small and bounded (at most ``MAX_ENTRIES`` users, expired ones dropped on each
write); it is written whole and renamed into place, so a reader never sees half of it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

FILE_NAME = "suspended.json"
MAX_ENTRIES = 10_000
SETTING = "BLENDMESH_USER_SUSPEND_SECONDS"
DEFAULT_SECONDS = 60


def seconds_from(env: Mapping[str, str]) -> int:
    """How long a flooding login is suspended; 0 turns suspension off."""
    raw = (env.get(SETTING) or "").strip()
    if not raw:
        return DEFAULT_SECONDS
    if not raw.isdigit():
        raise ValueError(f"{SETTING}={raw[:32]!r} must be a whole number of seconds (0: never)")
    return int(raw)


def active(path: Path, now: float) -> dict[str, float]:
    """The users suspended at ``now`` and until when; {} when there is no (readable) file,
    so a damaged file never keeps anyone out for good."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        str(user): float(until)
        for user, until in list(raw.items())[:MAX_ENTRIES]
        if isinstance(until, int | float) and math.isfinite(until) and until > now
    }


def suspend(path: Path, user: str, seconds: float, now: float) -> float:
    """Suspend ``user`` until ``now + seconds`` (a later suspension is kept); the time."""
    found = active(path, now)
    until = max(found.get(user, 0.0), now + seconds)
    found[user] = until
    kept = dict(sorted(found.items(), key=lambda item: -item[1])[:MAX_ENTRIES])
    tmp = path.with_name(f".{FILE_NAME}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(kept, out)
    tmp.replace(path)
    return until
