"""A bound on the memory one import may take, while the importer runs.

A file's declared sizes are checked against its bytes before any importer reads it
(contracts/gltf_sizes.py, blendfile.py), but an importer may still make much more than the
file holds (an OBJ's faces, an FBX's arrays). For the duration of an import the bridge
lowers its own soft address-space limit to what it uses now plus ``IMPORT_MEMORY_MIB``
(``BLENDMESH_IMPORT_MEMORY_MIB``), so an allocation past it fails inside the importer
(Python importers raise MemoryError, which Blender reports) instead of taking the host's
memory; the limit is put back afterwards. A C++ importer that cannot allocate may end the
bridge; the executor restarts it and restores the scene, so the bound holds either way.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator, Mapping

from services.bridge.budget.budget import BudgetSettingError

SETTING = "BLENDMESH_IMPORT_MEMORY_MIB"
DEFAULT_MIB = 4096
MIB = 1024 * 1024
OUT_OF_MEMORY = ("MemoryError", "Unable to allocate", "Not enough memory", "bad_alloc")


def import_memory_mib(env: Mapping[str, str]) -> int:
    raw = (env.get(SETTING) or "").strip()
    if not raw:
        return DEFAULT_MIB
    if not raw.isdigit() or int(raw) < 1:
        raise BudgetSettingError(f"{SETTING}={raw[:32]!r} must be a whole number of MiB, 1 or more")
    return int(raw)


IMPORT_MEMORY_MIB = import_memory_mib(os.environ)


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def capped(extra_mib: int | None = None) -> Iterator[None]:
    """Run the block with at most ``extra_mib`` MiB more address space than now."""
    extra = (IMPORT_MEMORY_MIB if extra_mib is None else extra_mib) * MIB
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def ran_out(message: str) -> bool:
    """Whether an importer's error says it could not allocate."""
    return any(word in message for word in OUT_OF_MEMORY)


def refusal(shown: str) -> str:
    return (
        f"Blender ran out of the {IMPORT_MEMORY_MIB} MiB an import may use while reading "
        f"{shown} ({SETTING} raises it); the file makes more than it holds, or split it"
    )
