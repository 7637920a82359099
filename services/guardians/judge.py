"""Judging one revision: its artifact laid out as a read-only folder, then run_guardians.

Runs in a worker thread (the guardians are synchronous and read files), never on the event
loop the embedded mesh shares.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from contracts.inspection import FILE_NAME
from services.guardians import run_guardians
from services.guardians.checks.artifact import decoded, decoded_once
from services.guardians.checks.budget import faces_of

PARAMS_FILE = "gates.json"  # the gate configuration's parameters, for guardians that take one


# One judgement at a time: the folder's name must not depend on chance (it is the result's
# repo_path, and a redelivered execution must produce the very same event), so two
# judgements of one revision would otherwise share it.
_one_at_a_time = threading.Lock()


def judge(
    artifact: bytes,
    guardians: list[str],
    params: Mapping[str, Any],
    work_dir: Path,
    name: str,
) -> dict[str, Any]:
    """``run_guardians`` over a read-only folder ``work_dir/name`` holding ``artifact``;
    removed afterwards."""
    return judge_counting(artifact, guardians, params, work_dir, name)[0]


def judge_counting(
    artifact: bytes,
    guardians: list[str],
    params: Mapping[str, Any],
    work_dir: Path,
    name: str,
) -> tuple[dict[str, Any], int | None]:
    """``judge``, and the evaluated faces the artifact counts (None when it does not
    decode), from the guardians' own decoding of it: the next revision's budget starts
    there."""
    with _one_at_a_time:
        return _judge(artifact, guardians, params, work_dir / name)


def _judge(
    artifact: bytes, guardians: list[str], params: Mapping[str, Any], folder: Path
) -> tuple[dict[str, Any], int | None]:
    _remove(folder)  # left over from a judgement a crash interrupted
    folder.mkdir(parents=True)
    try:
        (folder / FILE_NAME).write_bytes(artifact)
        (folder / PARAMS_FILE).write_text(json.dumps(dict(params), sort_keys=True))
        for path in folder.iterdir():
            path.chmod(0o400)
        folder.chmod(0o500)  # guardians are read-only; the folder says so too
        with decoded_once():
            judged = run_guardians(str(folder), guardians)
            try:
                faces: int | None = faces_of(decoded(artifact))
            except (msgspec.DecodeError, msgspec.ValidationError):
                faces = None
            return judged, faces
    finally:
        _remove(folder)


def _remove(folder: Path) -> None:
    if not folder.exists():
        return
    folder.chmod(0o700)
    for path in folder.iterdir():
        os.chmod(path, 0o600)
    shutil.rmtree(folder, ignore_errors=True)


def as_json(result: dict[str, Any]) -> str:
    """The orchestrator's result as JSON, keys in the order it built them. A guardian's
    output that is not JSON data is shown by its repr rather than lost."""
    return json.dumps(result, default=repr)
