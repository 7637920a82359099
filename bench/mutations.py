"""Break one spec clause at a time in the product code and see whether the fast tests notice.

    .venv/bin/python bench/mutations.py [--full [--workers N]] [--only NAME ...] [--list]

Each mutation in bench/mutations.toml names a clause of docs/conformance/clauses.toml, a file,
an exact snippet of it and its replacement. The committed tree (``git archive HEAD``) is copied
into a temporary directory, never touching the working files; there each mutation is applied
alone, the fast tests that name its clause (plus the tests the mutation names) run, and the
file is put back. A mutation is *caught* when those tests fail, *missed* when they pass.

``--full`` scores each mutation against the whole fast subset (``-m "not integration and
not e2e"``): its clause's tests run first, and only a mutation they miss runs the rest of
the subset, on ``--workers`` processes (pytest-xdist), stopping at the first failure. Each
line says which caught it, ``own`` or ``subset``, and the score counts both. What bounds the
time: one whole fast subset (about 80 s on two cores) for each mutation its own tests miss,
plus a few seconds of collection for each mutation.
Before any mutation the same tests run on the unmutated tree: a red baseline stops the run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTATIONS = ROOT / "bench" / "mutations.toml"
FAST = "not integration and not e2e"
MAX_MUTATIONS = 500  # a list far longer is a mistake, and would run for days
MUTANT = "BLENDMESH_MUTANT"  # set in the environment of the tests a mutation runs
MAX_WORKERS = 8  # xdist processes; more only compete for the cores
RUN_TIMEOUT = 1800.0  # seconds for one mutation's tests; a hang counts as caught (-x stops)
KEYS = {"name", "clause", "file", "original", "replacement", "tests", "why"}


class MutationError(ValueError):
    """A mutation cannot be applied as written; the message names it and the fix."""


@dataclass(frozen=True)
class Mutation:
    """One clause broken on purpose: ``original`` in ``file`` becomes ``replacement``."""

    name: str
    clause: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...] = ()
    why: str = ""


def load(path: Path, clauses: set[str]) -> list[Mutation]:
    """The mutations of ``path``, each checked against the clause ids and field types."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise MutationError(f"{path.name}: cannot read it as TOML ({e})") from e
    entries = raw.get("mutation")
    if set(raw) != {"mutation"} or not isinstance(entries, list):
        raise MutationError(f"{path.name}: write only [[mutation]] tables")
    if len(entries) > MAX_MUTATIONS:
        raise MutationError(f"{path.name}: {len(entries)} mutations, more than {MAX_MUTATIONS}")
    found: list[Mutation] = []
    for n, entry in enumerate(entries, 1):
        m = _mutation(entry, f"{path.name} mutation {n}", clauses)
        if any(m.name == other.name for other in found):
            raise MutationError(f"{path.name} mutation {n}: name {m.name!r} is used twice")
        found.append(m)
    return found


def _mutation(entry: object, where: str, clauses: set[str]) -> Mutation:
    if not isinstance(entry, dict):
        raise MutationError(f"{where}: not a table")
    if extra := set(entry) - KEYS:
        raise MutationError(f"{where}: unknown keys {sorted(extra)}")
    for key in ("name", "clause", "file", "original", "replacement"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise MutationError(f"{where}: {key} must be a non-empty string")
    tests = entry.get("tests", [])
    if not isinstance(tests, list) or not all(isinstance(t, str) and t for t in tests):
        raise MutationError(f"{where}: tests must be a list of test ids")
    if entry["clause"] not in clauses:
        raise MutationError(f"{where}: clause {entry['clause']!r} is not in clauses.toml")
    if entry["original"] == entry["replacement"]:
        raise MutationError(f"{where}: replacement equals original, nothing would change")
    if Path(entry["file"]).is_absolute() or ".." in Path(entry["file"]).parts:
        raise MutationError(f"{where}: file must be a path inside the repository")
    return Mutation(
        entry["name"], entry["clause"], entry["file"], entry["original"],
        entry["replacement"], tuple(tests), str(entry.get("why", "")),
    )  # fmt: skip


def mutate(text: str, m: Mutation) -> str:
    """``text`` with the mutation applied; its snippet must occur exactly once."""
    count = text.count(m.original)
    if count != 1:
        raise MutationError(
            f"{m.name}: the original snippet occurs {count} times in {m.file}; "
            "make it exact and unique again (the code moved on)"
        )
    return text.replace(m.original, m.replacement)


def snapshot(into: Path) -> None:
    """The committed tree (HEAD) written into ``into``: others' unsaved edits stay out."""
    tar = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"],
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")


def fast_tests(tree: Path) -> dict[str, list[str]]:
    """Clause id -> the fast tests in ``tree`` that name it."""
    out = _python(tree, ["-m", "tests.conformance", "--json"], timeout=600)
    if out.returncode != 0:
        raise MutationError(f"collecting the snapshot's tests failed:\n{out.stderr[-3000:]}")
    found: dict[str, list[dict[str, object]]] = json.loads(out.stdout)
    return {cid: [str(t["test"]) for t in ts if t["fast"]] for cid, ts in found.items()}


def _python(tree: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    # -B: a file put back within the same second as its mutant must not reuse its bytecode.
    return subprocess.run(
        [sys.executable, "-B", *args],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        # MUTANT tells the bench's own checks of bench/mutations.toml that the tree is
        # mutated on purpose: a snippet missing from its file is then no finding.
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", MUTANT: "1"},
    )


def run_tests(
    tree: Path, selected: list[str], workers: int = 0
) -> subprocess.CompletedProcess[str]:
    """The fast subset of ``selected`` (test ids, or ``tests`` for all) run in ``tree``, on
    ``workers`` xdist processes (0: in one process, no xdist)."""
    spread = ["-n", str(workers)] if workers > 0 else []
    args = ["-m", "pytest", "-q", "-x", "-m", FAST, *spread, *selected]
    try:
        return _python(tree, args, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 1, "", f"timed out after {RUN_TIMEOUT:.0f} s")


def verdict(code: int) -> str:
    """caught, missed or broken from pytest's exit code (2: a mutant that cannot import)."""
    return {0: "missed", 1: "caught", 2: "caught", 5: "missed"}.get(code, "broken")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/mutations.py", description=__doc__)
    parser.add_argument("--full", action="store_true", help="run the whole fast subset each time")
    parser.add_argument("--only", nargs="+", default=[], help="run only the mutations named")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument(
        "--workers", type=int, default=2, help="xdist processes for the whole subset (--full)"
    )
    args = parser.parse_args(argv)
    if not 0 <= args.workers <= MAX_WORKERS:
        said = f"--workers must be 0 to {MAX_WORKERS}, not {args.workers}"
        print(f"mutations: {said}", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from tests.conformance.clauses import load as load_clauses

    try:
        mutations = load(MUTATIONS, set(load_clauses()))
    except MutationError as e:
        print(f"mutations: {e}", file=sys.stderr)
        return 2
    if unknown := set(args.only) - {m.name for m in mutations}:
        print(f"mutations: no mutation named {sorted(unknown)}", file=sys.stderr)
        return 2
    chosen = [m for m in mutations if not args.only or m.name in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.name:36} {m.clause:32} {m.file}")
        return 0
    # A stop (SIGTERM) unwinds like an exception: the running pytest is killed, the mutated
    # file put back and the scratch tree removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory(prefix="blendmesh-mutations-") as scratch:
        tree = Path(scratch)
        snapshot(tree)
        return _run(tree, chosen, args.full, args.workers)


def _run(tree: Path, chosen: list[Mutation], full: bool, workers: int = 0) -> int:
    try:
        by_clause = fast_tests(tree)
        selections = {m.name: _selection(m, by_clause) for m in chosen}
    except MutationError as e:
        print(f"mutations: {e}", file=sys.stderr)
        return 2
    every = ["tests"] if full else sorted({t for s in selections.values() for t in s})
    base = run_tests(tree, every, workers if full else 0)
    if base.returncode != 0:
        said = (base.stdout + base.stderr)[-3000:]
        print(f"mutations: the unmutated tree fails its tests:\n{said}")
        return 2
    results: list[tuple[Mutation, str, str]] = []
    for m in chosen:
        started = time.monotonic()
        mark, by = _try(tree, m, selections[m.name]), "own"
        if full and mark == "missed":
            mark, by = _try(tree, m, ["tests"], workers), "subset"
        results.append((m, mark, by))
        took = time.monotonic() - started
        ran = f"{len(selections[m.name]):3} own tests" + (f", then {by}" if by != "own" else "")
        print(f"{mark:7} {m.name:40} {m.clause:30} {ran} {took:4.0f} s", flush=True)
    _score(results, full)
    return 0 if all(r == "caught" for _, r, _ in results) else 1


def _score(results: list[tuple[Mutation, str, str]], full: bool) -> None:
    caught = sum(1 for _, r, _ in results if r == "caught")
    own = sum(1 for _, r, by in results if r == "caught" and by == "own")
    total = max(len(results), 1)
    against = "the whole fast subset" if full else "the tests that name each clause"
    print(f"score: {caught}/{len(results)} caught ({100 * caught / total:.0f}%) by {against}")
    if full:
        print(f"  by the clause's own tests alone: {own}/{len(results)} ({100 * own / total:.0f}%)")
    for m, r, _ in results:
        if r != "caught":
            print(f"  {r}: {m.name} ({m.clause}, {m.file})")


def _selection(m: Mutation, by_clause: dict[str, list[str]]) -> list[str]:
    return sorted({*by_clause.get(m.clause, []), *m.tests})


def _try(tree: Path, m: Mutation, selected: list[str], workers: int = 0) -> str:
    if not selected:
        return "missed"  # no fast test names the clause: nothing could notice
    path = tree / m.file
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(mutate(original, m), encoding="utf-8")
    except MutationError as e:
        print(f"mutations: {e}", file=sys.stderr)
        return "broken"
    try:
        done = run_tests(tree, selected, workers)
    finally:
        path.write_text(original, encoding="utf-8")
    if done.returncode not in (0, 1):
        print(f"  {m.name}: pytest exit {done.returncode}: {done.stdout[-400:]}", file=sys.stderr)
    return verdict(done.returncode)


if __name__ == "__main__":
    sys.exit(main())
