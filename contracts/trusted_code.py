"""Trusted Python as the doors show it: the code a person reads, and the hashes they quote.

The rules are contracts.python_approvals' (the policy service and the executor check
them); this is what the CLI, the HTTP gateway, the web console and the MCP door need to
show a pending approval and to refuse, before anything is published, a resolution the
policy would ignore. Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from contracts.python_approvals import TRUSTED_TOOL, trusted_hashes, unquoted


class AskedOperation(Protocol):
    """What every view of a pending operation has (events.PendingOperation and its views)."""

    @property
    def operation_id(self) -> str: ...

    @property
    def tool(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...


class TrustedCode(NamedTuple):
    """One trusted operation's code as the person reads it, and the hash that names it."""

    operation_id: str
    code: str
    code_sha256: str


def trusted_code(operations: Iterable[AskedOperation]) -> list[TrustedCode]:
    """The trusted Python among ``operations``, in order.

    The hash is the operation's own ``code_sha256``: the policy asks a person only about
    operations whose hash is their code's, so it names exactly the text shown.
    """
    found = []
    for op in operations:
        if op.tool == TRUSTED_TOOL:
            code, named = op.args.get("code"), op.args.get("code_sha256")
            found.append(
                TrustedCode(
                    op.operation_id,
                    code if isinstance(code, str) else "",
                    named if isinstance(named, str) else "",
                )
            )
    return found


# Control, format (bidirectional overrides, zero-width) and separator characters: a line
# that holds one can show a person other code than the code that runs.
_HIDING = frozenset({"Cc", "Cf", "Zl", "Zp"})


def visible(line: str) -> str:
    """``line`` with every character that could hide or reorder code written as ``\\uXXXX``
    (tabs kept), so the text a person reads is the text that runs."""
    return "".join(
        f"\\u{ord(ch):04x}" if ch != "\t" and unicodedata.category(ch) in _HIDING else ch
        for ch in line
    )


def numbered(code: str) -> list[str]:
    """``code`` as numbered, visible lines: split at ``\\n`` only (a ``\\r\\n`` counts as one
    break), so any other break Python would honour is shown, not obeyed."""
    lines = [visible(line.removesuffix("\r")) for line in code.split("\n")]
    width = len(str(len(lines)))
    return [f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=1)]


def code_hashes(operations: Iterable[AskedOperation]) -> list[str]:
    """The hashes an approval of ``operations`` must quote, once each, in order."""
    return trusted_hashes((op.tool, op.args) for op in operations)


def quote_problem(operations: Sequence[AskedOperation], quoted: Sequence[str]) -> str | None:
    """Why approving ``operations`` while quoting ``quoted`` would not count; None if it does."""
    missing = set(unquoted(((op.tool, op.args) for op in operations), quoted))
    if not missing:
        return None
    named = ", ".join(
        f"{t.code_sha256} (operation {t.operation_id})"
        for t in trusted_code(operations)
        if t.code_sha256 in missing
    )
    return (
        f"an approval of trusted Python must quote the sha256 of its code; missing {named}: "
        "read the code shown with the pending approval, then approve quoting its hash"
    )
