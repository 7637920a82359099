"""How an approval of trusted Python names the code it covers (issue 12).

A ``python.trusted`` operation runs real ``bpy`` (in the sandbox) only after a person read
that exact code: the approval shows the code with its ``code_sha256``, and a resolution
counts only if it quotes the hash of every trusted step it approves. A standing
"always allow" is keyed by the hash too, never by the tool alone. The policy service and
the executor both check this, so the rules live here once. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contracts.python_steps import CODE_SHA256_RE, code_sha256

SAFE_TOOL = "python.safe"
TRUSTED_TOOL = "python.trusted"
PYTHON_TOOLS = frozenset({SAFE_TOOL, TRUSTED_TOOL})


def code_problem(tool: str, args: Mapping[str, Any]) -> str | None:
    """Why a Python operation's ``code_sha256`` does not name its code, or None."""
    if tool not in PYTHON_TOOLS:
        return None
    code, quoted = args.get("code"), args.get("code_sha256")
    if not isinstance(code, str) or not isinstance(quoted, str) or not CODE_SHA256_RE.match(quoted):
        return f"{tool} needs a code string and its code_sha256 ('sha256:<64 hex>')"
    if quoted != code_sha256(code):
        return f"{tool}'s code_sha256 {quoted} is not the hash of its code ({code_sha256(code)})"
    return None


def trusted_hashes(operations: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The code hashes of the trusted steps among ``(tool, args)`` pairs, in order, once each."""
    seen: list[str] = []
    for tool, args in operations:
        if tool == TRUSTED_TOOL:
            quoted = str(args.get("code_sha256", ""))
            if quoted not in seen:
                seen.append(quoted)
    return seen


def unquoted(
    operations: Iterable[tuple[str, Mapping[str, Any]]], quoted: Iterable[str]
) -> list[str]:
    """The trusted code hashes of ``operations`` a resolution did not quote."""
    have = set(quoted)
    return [h for h in trusted_hashes(operations) if h not in have]


def standing_key(tool: str, args: Mapping[str, Any]) -> str:
    """What an always-allow entry is keyed by: the tool, or for trusted Python its code."""
    if tool == TRUSTED_TOOL:
        return f"{tool}@{args.get('code_sha256', '')}"
    return tool
