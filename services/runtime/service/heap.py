"""The heap of a process that runs services.

A process that runs services holds a few hundred thousand objects from the moment they are
up: modules, classes and what the SDKs (nats-py, FastAPI, pydantic, the MCP SDK,
OpenTelemetry) keep. Every full pass of Python's cyclic garbage collector walks all of
them: in the embedded mesh of ``bench/big_scene.py`` a pass took about 0.1 s, on the event
loop every service shares, in every other edit of the big scene (decoding its artifacts
allocates enough to start one). So once the services are up, what is alive then is frozen
(``gc.freeze``): passes leave it out, and it is still freed as soon as nothing refers to
it. ``thaw`` undoes that when the services stop, so a process that runs meshes one after
another (a test session) leaves no earlier mesh's cycles out of every pass.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Leave what is alive now out of the collector's passes."""
    gc.freeze()


def thaw() -> None:
    """Put the frozen objects back into the collector's passes."""
    gc.unfreeze()
