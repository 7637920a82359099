"""The guardians' parameters: ``gates.json`` beside the artifact, written by the service.

Parameters are configuration, never environment: the guardians service writes this file
from its settings into the folder it hands the orchestrator, so a run's result depends on
the folder alone. An absent file means the defaults; a file that does not decode (or
names a key this version does not know, a typo that would silently keep a default) makes
the guardian that reads it raise, which fails closed.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from services.guardians.checks.artifact import read_file

FILE_NAME = "gates.json"
DEFAULT_POLYGON_BUDGET = 1_000_000  # evaluated faces over the whole scene


class GateSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the parameterised guardians are held to."""

    polygon_budget: Annotated[int, msgspec.Meta(ge=0)] = DEFAULT_POLYGON_BUDGET
    # The evaluated faces of the revision the run started from, which the service reads
    # from that revision's artifact: the budget judges what a run adds (a scene already
    # over it stays editable). None when unknown: the whole scene is judged.
    faces_before: Annotated[int, msgspec.Meta(ge=0)] | None = None


def load_gate_settings(repo_path: str) -> GateSettings:
    """The settings in ``<repo_path>/gates.json``, or the defaults when there is none."""
    try:
        data = read_file(repo_path, FILE_NAME)
    except FileNotFoundError:
        return GateSettings()
    return msgspec.json.decode(data, type=GateSettings)


def encode_gate_settings(settings: GateSettings) -> bytes:
    """The bytes of ``gates.json`` for ``settings`` (sorted keys, every field written)."""
    return msgspec.json.encode(msgspec.to_builtins(settings), order="sorted")
