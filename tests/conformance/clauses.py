"""The clause list, read and checked once: every id a test may name, its text and its ADR."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLAUSES_FILE = ROOT / "docs" / "conformance" / "clauses.toml"
# `<spec>-§<section slug>.<n>`, e.g. 001-§safety-modes.2; the slug is the spec heading's.
ID = re.compile(r"^00[0-4]-§[a-z0-9]+(?:-[a-z0-9]+)*\.[1-9][0-9]{0,2}$")
# The five specs hold a few hundred clauses; a file far larger is a mistake, not a spec.
MAX_CLAUSES = 1000
MAX_TEXT = 300
KEYS = {"id", "text", "adr"}


class ClauseFileError(ValueError):
    """The clause file cannot be trusted as it stands; the message names the entry and the fix."""


@dataclass(frozen=True)
class Clause:
    """One normative clause; ``adr`` names the record where blendmesh deliberately differs."""

    id: str
    text: str
    adr: str | None = None


def load(path: Path = CLAUSES_FILE, root: Path = ROOT) -> dict[str, Clause]:
    """Every clause by id, in file order; ``adr`` paths are read from ``root``.
    Raises ClauseFileError on any malformed entry."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ClauseFileError(f"{path.name}: cannot read it as TOML ({e})") from e
    entries = raw.get("clause")
    if set(raw) != {"clause"} or not isinstance(entries, list):
        raise ClauseFileError(f"{path.name}: write only [[clause]] tables, found {sorted(raw)}")
    if len(entries) > MAX_CLAUSES:
        raise ClauseFileError(f"{path.name}: {len(entries)} clauses, more than {MAX_CLAUSES}")
    clauses: dict[str, Clause] = {}
    for n, entry in enumerate(entries, 1):
        clause = _clause(entry, f"{path.name} clause {n}", root)
        if clause.id in clauses:
            raise ClauseFileError(f"{path.name} clause {n}: id {clause.id!r} is used twice")
        clauses[clause.id] = clause
    return clauses


def _clause(entry: object, where: str, root: Path) -> Clause:
    if not isinstance(entry, dict):
        raise ClauseFileError(f"{where}: not a table")
    if extra := set(entry) - KEYS:
        raise ClauseFileError(f"{where}: unknown keys {sorted(extra)}; use id, text and adr")
    cid, text, adr = entry.get("id"), entry.get("text"), entry.get("adr")
    if not isinstance(cid, str) or not ID.match(cid):
        raise ClauseFileError(f"{where}: id {cid!r} is not of the form 001-§safety-modes.2")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise ClauseFileError(f"{where} ({cid}): text must be one line of 1-{MAX_TEXT} characters")
    if "\n" in text:
        raise ClauseFileError(f"{where} ({cid}): text must be one line")
    if adr is not None and (
        not isinstance(adr, str) or not adr.startswith("docs/adr/") or not (root / adr).is_file()
    ):
        raise ClauseFileError(f"{where} ({cid}): adr {adr!r} is not a file under docs/adr/")
    return Clause(cid, text, adr)
