"""From a ``run_guardians`` result to spec 004 §8's verification gate envelope. Pure.

The orchestrator interprets nothing (003 §2.2); this is where a result is read. A run
passes only when the orchestrator says ``ok`` and every guardian's output says
``passed: true``: an output whose ``passed`` is missing or not ``true`` fails, so a
guardian cannot pass by omission.
"""

from __future__ import annotations

from typing import Any

from contracts.gates import GateEnvelope

GUARDIAN_FAILED = "GUARDIAN_FAILED"  # a guardian that failed closed, whatever its gate
UNNAMED_GATE = "UNNAMED_GATE"  # a failing output that names no gate


def envelope(result: dict[str, Any]) -> GateEnvelope:
    """The 004 §8 envelope of ``result``.

    ``failed_gates``: each failing output's ``gate`` in order, each once, then
    ``GUARDIAN_FAILED`` once if any guardian failed closed. ``messages``: each failing
    output's messages in order, then ``"guardian <id> failed closed: <details>"`` for each
    fail-closed entry. A result that failed with no entry to blame (an invalid
    ``repo_path`` runs no guardian, and a result with no entries never passes) fails with
    ``GUARDIAN_FAILED`` and says so.
    """
    gates: list[str] = []
    messages: list[str] = []
    closed: list[str] = []
    given = result.get("guardians")
    entries: list[Any] = given if isinstance(given, list) else []
    for entry in entries:
        problem = _closed(entry)
        if problem is not None:
            closed.append(problem)
            continue
        output = entry["output"]
        if output.get("passed") is True:
            continue
        gate = output.get("gate")
        gate = gate if isinstance(gate, str) and gate else UNNAMED_GATE
        if gate not in gates:
            gates.append(gate)
        said = output.get("messages")
        said = [text for text in said if isinstance(text, str)] if isinstance(said, list) else []
        messages += said or [f"{gate} failed (guardian {entry['guardian_id']} said no more)"]
    # Nothing ran, nothing passed: a result without entries never succeeds.
    passed = bool(entries) and result.get("ok") is True and result.get("fail_closed") is False
    if not passed and not gates and not closed:
        closed.append(f"run_guardians failed closed for repo_path {result.get('repo_path')!r}")
    if closed:
        gates.append(GUARDIAN_FAILED)
        messages += closed
    return GateEnvelope(success=passed and not gates, failed_gates=gates, messages=messages)


def _closed(entry: object) -> str | None:
    """Why ``entry`` failed closed, or None when it ran and returned an output."""
    if not isinstance(entry, dict):
        return "a guardian entry is not an object"
    if entry.get("ok") is True and entry.get("fail_closed") is False:
        if isinstance(entry.get("output"), dict):
            return None
        return f"guardian {entry.get('guardian_id')} failed closed: it returned no output"
    return f"guardian {entry.get('guardian_id')} failed closed: {entry.get('details')}"
