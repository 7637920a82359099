"""``run_guardians`` of spec 003 V1: run the requested guardians, aggregate, interpret nothing.

What it guarantees (each is a clause of 003, frozen):

- Input first. ``repo_path`` must be a non-empty absolute path string without NUL: a
  relative path would make the result depend on the working directory, which 003 §3.1
  forbids. An invalid ``repo_path`` gives ``ok=false, fail_closed=true`` and
  ``guardians: []``: no guardian ran, and none of the five codes of §3.3 describes a bad
  path, so an entry would have to carry a code that lies. A non-string ``repo_path`` is
  echoed as ``""`` (§4 types it as a string). The path is not looked at: whether it
  exists is the guardians' business (one that cannot read it raises, which fails closed).
- ``guardians`` that is not a list, or is empty, gives one entry with ``guardian_id: ""``
  and ``details: "fail-closed: guardians_empty"``: §3.3 makes that code a ``details``
  string, and ``details`` lives only on an entry. ``repo_path`` is checked first.
- Otherwise one entry per requested id, in the order given, duplicates kept. An id that
  is not a string cannot be in the table: it is unknown, and echoed as ``""``.
- Each entry's ``ok``/``fail_closed`` are the orchestrator's (§3.2): true/false exactly
  when the guardian was resolved, called, and returned a dict with ``"tool"``; what the
  guardian's output says (``passed`` and the like) is not read. ``details`` is ``"ok"``
  then, else one of the five ``fail-closed: ...`` codes.
- ``output`` is the very object the guardian returned (§7.3): not copied, normalised or
  re-serialised.
- Aggregation (§7.1): ``ok = all(entry ok)``, ``fail_closed = not ok or any(entry
  fail_closed)``.
- Nothing else: no timestamps, randomness or environment text, no writes, no network.
"""

from __future__ import annotations

from typing import Any

from services.guardians import routing

TOOL = "run_guardians"
DETAILS_OK = "ok"
GUARDIANS_EMPTY = "fail-closed: guardians_empty"
GUARDIAN_UNKNOWN = "fail-closed: guardian_unknown"
GUARDIAN_IMPORT_FAILED = "fail-closed: guardian_import_failed"
GUARDIAN_CALL_FAILED = "fail-closed: guardian_call_failed"
GUARDIAN_OUTPUT_INVALID = "fail-closed: guardian_output_invalid"
FAILURE_CODES = (
    GUARDIANS_EMPTY,
    GUARDIAN_UNKNOWN,
    GUARDIAN_IMPORT_FAILED,
    GUARDIAN_CALL_FAILED,
    GUARDIAN_OUTPUT_INVALID,
)


def run_guardians(repo_path: str, guardians: list[str]) -> dict[str, Any]:
    """Run ``guardians`` on ``repo_path`` in order; the 003 §4 aggregation object.

    Never raises for any input: every failure is fail-closed data.
    """
    if not _valid_repo_path(repo_path):
        echoed = repo_path if isinstance(repo_path, str) else ""
        return _aggregate(echoed, ok=False, fail_closed=True, entries=[])
    if not isinstance(guardians, list) or not guardians:
        return _aggregate(repo_path, False, True, [_failed("", GUARDIANS_EMPTY)])
    entries = [_run_one(repo_path, guardian_id) for guardian_id in guardians]
    ok = all(entry["ok"] for entry in entries)
    fail_closed = (not ok) or any(entry["fail_closed"] for entry in entries)
    return _aggregate(repo_path, ok, fail_closed, entries)


def _valid_repo_path(repo_path: object) -> bool:
    return isinstance(repo_path, str) and repo_path.startswith("/") and "\x00" not in repo_path


def _run_one(repo_path: str, guardian_id: object) -> dict[str, Any]:
    if not isinstance(guardian_id, str):
        return _failed("", GUARDIAN_UNKNOWN)
    target = routing.GUARDIAN_ROUTING_TABLE.get(guardian_id)
    if target is None:
        return _failed(guardian_id, GUARDIAN_UNKNOWN)
    try:
        guardian = routing.resolve(target)
    except Exception:  # noqa: BLE001 - importing a module can raise anything: fail closed
        return _failed(guardian_id, GUARDIAN_IMPORT_FAILED)
    try:
        output = guardian(repo_path)
    except (Exception, SystemExit):  # noqa: BLE001 - a guardian that raises has failed
        return _failed(guardian_id, GUARDIAN_CALL_FAILED)
    if not isinstance(output, dict) or "tool" not in output:
        return _failed(guardian_id, GUARDIAN_OUTPUT_INVALID)
    return _entry(guardian_id, invoked=True, ok=True, output=output, details=DETAILS_OK)


def _failed(guardian_id: str, code: str) -> dict[str, Any]:
    return _entry(guardian_id, invoked=False, ok=False, output=None, details=code)


def _entry(
    guardian_id: str, *, invoked: bool, ok: bool, output: dict[str, Any] | None, details: str
) -> dict[str, Any]:
    return {
        "guardian_id": guardian_id,
        "invoked": invoked,
        "ok": ok,
        "fail_closed": not ok,
        "output": output,
        "details": details,
    }


def _aggregate(
    repo_path: str, ok: bool, fail_closed: bool, entries: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "tool": TOOL,
        "repo_path": repo_path,
        "ok": ok,
        "fail_closed": fail_closed,
        "guardians": entries,
    }
