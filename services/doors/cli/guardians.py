"""``blendmesh guardians SCENE``: the guardians' verdict on a revision, in a few lines.

``run_guardians``' whole result is for programs (``--json``); a person reads whether the
revision passed, how many guardians said so, and what each failing one said.
"""

from __future__ import annotations

from typing import Any

from services.guardians.envelope import envelope


def verdict_lines(scene_id: str, result: dict[str, Any]) -> list[str]:
    """The verdict of ``result``, read as the gates read it (``envelope``)."""
    gate = envelope(result)
    entries = [e for e in result.get("guardians") or [] if isinstance(e, dict)]
    ids = [str(e.get("guardian_id") or "?") for e in entries]
    if gate.success:
        return [f"scene {scene_id}: passed, {len(ids)} guardians ({', '.join(ids)})"]
    failed = ", ".join(gate.failed_gates)
    lines = [f"scene {scene_id}: failed ({failed}), {len(ids)} guardians ran"]
    lines += [f"  {message}" for message in gate.messages]
    return lines
