"""The blendmesh release this process runs, as its installed package says.

Recorded in the events a run's planner and executor publish (ADR 0053), so a run's
timeline names the code that planned and executed it. Read once: a process does not
change release while it runs.
"""

from __future__ import annotations

from importlib import metadata

UNKNOWN = "unknown"


def _installed() -> str:
    try:
        return metadata.version("blendmesh")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return UNKNOWN


BLENDMESH_VERSION = _installed()
