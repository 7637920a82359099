"""bench/mutations.py's own boundaries: the mutation file, applying a snippet, the verdict."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.mutations import MUTANT, MUTATIONS, Mutation, MutationError, load, mutate, verdict
from tests.conformance.clauses import load as load_clauses

CLAUSES = {"002-§run-states.2"}
GOOD = """[[mutation]]
name = "planning-is-executing"
clause = "002-§run-states.2"
file = "contracts/fold.py"
original = 'return "planning"'
replacement = 'return "executing"'
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mutations.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_mutation_file_when_read_has_forty_or_more_each_naming_a_clause() -> None:
    mutations = load(MUTATIONS, set(load_clauses()))
    assert len(mutations) >= 40
    assert len({m.name for m in mutations}) == len(mutations)


def test_mutation_file_when_read_names_snippets_the_code_still_holds_once() -> None:
    # A snippet the code no longer holds is a mutation that never runs: the bench calls it
    # broken, and the clause silently loses its check. Failing here names it at once.
    if os.environ.get(MUTANT):
        pytest.skip("the bench mutated a file on purpose: its snippet is gone while it runs")
    root = MUTATIONS.parents[1]
    for m in load(MUTATIONS, set(load_clauses())):
        text = (root / m.file).read_text(encoding="utf-8")
        assert mutate(text, m) != text, m.name


def test_mutation_file_when_well_formed_gives_its_mutations(tmp_path: Path) -> None:
    (m,) = load(write(tmp_path, GOOD), CLAUSES)
    assert m == Mutation(
        "planning-is-executing",
        "002-§run-states.2",
        "contracts/fold.py",
        'return "planning"',
        'return "executing"',
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[mutation]\n", "cannot read it as TOML"),
        ("x = 1\n" + GOOD, "write only [[mutation]] tables"),
        (GOOD + 'colour = "red"\n', "unknown keys ['colour']"),
        (GOOD.replace("002-§run-states.2", "002-§run-states.99"), "is not in clauses.toml"),
        (GOOD.replace('"executing"', '"planning"'), "replacement equals original"),
        (GOOD.replace('name = "planning-is-executing"\n', ""), "name must be a non-empty"),
        (GOOD.replace('"contracts/fold.py"', '"/etc/passwd"'), "inside the repository"),
        (GOOD.replace('"contracts/fold.py"', '"../x.py"'), "inside the repository"),
        (GOOD + "tests = [1]\n", "tests must be a list"),
        (GOOD + GOOD, "is used twice"),
        ("[[mutation]]\n" * 501, "more than 500"),
    ],
)
def test_mutation_file_when_malformed_is_refused_naming_the_fault(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(MutationError) as info:
        load(write(tmp_path, text), CLAUSES)
    assert said in str(info.value)


def test_mutate_when_snippet_occurs_once_replaces_it() -> None:
    m = Mutation("n", "002-§run-states.2", "f.py", "a = 1", "a = 2")
    assert mutate("x = 0\na = 1\n", m) == "x = 0\na = 2\n"


@pytest.mark.parametrize("text", ["x = 0\n", "a = 1\na = 1\n"])
def test_mutate_when_snippet_missing_or_repeated_refuses_saying_how_often(text: str) -> None:
    m = Mutation("n", "002-§run-states.2", "f.py", "a = 1", "a = 2")
    with pytest.raises(MutationError) as info:
        mutate(text, m)
    assert f"occurs {text.count('a = 1')} times in f.py" in str(info.value)


@pytest.mark.parametrize(
    ("code", "said"), [(0, "missed"), (1, "caught"), (2, "caught"), (5, "missed"), (4, "broken")]
)
def test_verdict_when_pytest_exits_reads_its_code(code: int, said: str) -> None:
    assert verdict(code) == said
