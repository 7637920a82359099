"""``python -m tests.conformance [--check] [--allow-untested] [--json]``: write or check
docs/conformance.md, or print which tests name which clause as JSON (bench/mutations.py reads it).

``--check`` fails when the file is stale, or when a clause has neither a test nor an ADR;
``--allow-untested`` tolerates the latter while the specs' gaps are being closed.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from tests.conformance.clauses import ROOT, ClauseFileError, load
from tests.conformance.collect import CollectionFailed, tests_by_clause
from tests.conformance.table import render, status

TABLE = ROOT / "docs" / "conformance.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the table is stale")
    parser.add_argument(
        "--allow-untested", action="store_true", help="with --check: untested clauses do not fail"
    )
    parser.add_argument("--json", action="store_true", help="print clause id -> tests as JSON")
    parser.add_argument("--output", type=Path, default=TABLE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        clauses = load()
        tests = tests_by_clause([str(ROOT / "tests"), "--rootdir", str(ROOT)])
    except (ClauseFileError, CollectionFailed) as e:
        print(f"conformance: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({cid: [asdict(m) for m in found] for cid, found in tests.items()}))
        return 0
    text = render(clauses, tests)
    untested = [cid for cid, c in clauses.items() if status(c, tests.get(cid, [])) == "untested"]
    if not args.check:
        args.output.write_text(text, encoding="utf-8")
        print(f"conformance: wrote {args.output.name}; {len(untested)} of {len(clauses)} untested")
        return 0
    current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
    code, message = judge(current, text, untested, args.allow_untested)
    print(f"conformance: {message}", file=sys.stderr if code else sys.stdout)
    return code


def judge(current: str, text: str, untested: list[str], allow_untested: bool) -> tuple[int, str]:
    """``--check``'s verdict on the table as committed (``current``) against ``text``."""
    if current != text:
        return 1, "docs/conformance.md is stale; run python -m tests.conformance"
    if untested and not allow_untested:
        shown = ", ".join(untested[:20]) + (", ..." if len(untested) > 20 else "")
        return 1, f"{len(untested)} clauses have no test and no ADR: {shown}"
    return 0, f"docs/conformance.md is up to date; clauses untested: {len(untested)}"


if __name__ == "__main__":
    sys.exit(main())
