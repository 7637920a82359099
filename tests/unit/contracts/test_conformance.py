"""The conformance table's own boundaries: the clause file, the ``clause`` mark, the table."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from tests.conformance.__main__ import TABLE, judge
from tests.conformance.clauses import ROOT, Clause, ClauseFileError, load
from tests.conformance.collect import Marked, marked
from tests.conformance.marker import misnamed
from tests.conformance.table import render, status

GOOD = '[[clause]]\nid = "001-§safety-modes.2"\ntext = "headless_safe is the default."\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clauses.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_clause_file_when_read_holds_every_spec_with_unique_ids() -> None:
    clauses = load()
    assert len(clauses) >= 186
    assert {cid[:3] for cid in clauses} == {"000", "001", "002", "003", "004"}
    assert clauses["001-§safety-modes.3"].text == "A ui_assisted tool requires the Blender UI."


def test_clause_file_when_well_formed_gives_its_clauses(tmp_path: Path) -> None:
    assert load(write(tmp_path, GOOD), tmp_path) == {
        "001-§safety-modes.2": Clause("001-§safety-modes.2", "headless_safe is the default.")
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[[clause]\n", "cannot read it as TOML"),
        ('title = "x"\n' + GOOD, "write only [[clause]] tables"),
        (GOOD.replace("text =", 'owner = "me"\ntext ='), "unknown keys ['owner']"),
        (GOOD.replace("001-§safety-modes.2", "001-4.2"), "is not of the form"),
        (GOOD.replace("001-§safety-modes.2", "005-§x.1"), "is not of the form"),
        (GOOD.replace("001-§safety-modes.2", "001-§Safety Modes.2"), "is not of the form"),
        (GOOD + GOOD, "is used twice"),
        (GOOD.replace('"headless_safe is the default."', '""'), "text must be one line"),
        (GOOD.replace('"headless_safe is the default."', '"""a\nb"""'), "text must be one line"),
        (GOOD.replace('"headless_safe is the default."', '"' + "x" * 301 + '"'), "1-300"),
        (GOOD + 'adr = "docs/adr/9999-none.md"\n', "is not a file under docs/adr/"),
        (GOOD + 'adr = "../README.md"\n', "is not a file under docs/adr/"),
        ("[[clause]]\n" * 1001, "more than 1000"),
    ],
)
def test_clause_file_when_malformed_is_refused_naming_the_fault(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(ClauseFileError) as info:
        load(write(tmp_path, text), tmp_path)
    assert said in str(info.value)


def test_clause_file_when_adr_exists_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "docs" / "adr" / "0001-x.md").write_text("# x\n")
    clauses = load(write(tmp_path, GOOD + 'adr = "docs/adr/0001-x.md"\n'), tmp_path)
    assert clauses["001-§safety-modes.2"].adr == "docs/adr/0001-x.md"


def test_marks_when_id_unknown_or_missing_are_named() -> None:
    wrong = misnamed(
        [("t::a", ["001-§safety-modes.2"]), ("t::b", ["001-§safety-mode.2"]), ("t::c", [])],
        ["001-§safety-modes.2"],
    )
    assert wrong == ["t::b: unknown clause '001-§safety-mode.2'", "t::c: clause() names no clause"]


def run_pytest(tmp_path: Path, clause: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_marked.py").write_text(
        f"import pytest\n\n@pytest.mark.clause({clause!r})\ndef test_x():\n    assert True\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conformance.marker",
            "--strict-markers",
            "-p",
            "no:cacheprovider",
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def test_collection_when_a_mark_names_an_unknown_clause_fails_naming_it(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "001-§safety-modes.99")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "unknown clause '001-§safety-modes.99'" in done.stderr


def test_collection_when_a_mark_names_a_clause_runs_the_test(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, "001-§safety-modes.2")
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "1 passed" in done.stdout


class _Item:
    """What ``marked`` reads of a collected test: its id and its marks."""

    def __init__(self, nodeid: str, *marks: pytest.MarkDecorator) -> None:
        self.nodeid = nodeid
        self.marks = [m.mark for m in marks]

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next((m for m in self.marks if m.name == name), None)

    def iter_markers(self, name: str) -> Iterator[pytest.Mark]:
        return (m for m in self.marks if m.name == name)


def test_marked_when_one_variant_of_a_function_is_fast_counts_it_fast() -> None:
    clause = pytest.mark.clause("000-§planning.1")
    items = [
        _Item("f.py::test_x[nats]", clause, pytest.mark.integration),
        _Item("f.py::test_x[memory]", clause),
        _Item("f.py::test_x[real]", clause, pytest.mark.e2e),
        _Item("f.py::test_y[nats]", clause, pytest.mark.integration),
        _Item("f.py::test_y[real]", clause, pytest.mark.e2e),
    ]
    assert marked(cast(list[pytest.Item], items))["000-§planning.1"] == [
        Marked("f.py::test_x", True),
        Marked("f.py::test_y", False),
    ]


def test_status_when_tests_or_adr_or_neither() -> None:
    plain, differs = Clause("000-§a.1", "t"), Clause("000-§a.2", "t", "docs/adr/0011-x.md")
    assert status(plain, [Marked("t.py::x", True)]) == "tested"
    assert status(differs, []) == "differs"
    assert status(differs, [Marked("t.py::x", True)]) == "differs"  # tests of the departure
    assert status(plain, []) == "untested"


def test_table_when_rendered_counts_links_and_escapes() -> None:
    clauses = {
        "000-§a.1": Clause("000-§a.1", "a | b"),
        "000-§a.2": Clause("000-§a.2", "c", "docs/adr/0011-x.md"),
        "003-§b.1": Clause("003-§b.1", "d"),
    }
    text = render(clauses, {"000-§a.1": [Marked("tests/unit/t.py::x", True)]})
    assert "| 000 | 2 | 1 | 1 | 0 |" in text
    assert "| all | 3 | 1 | 1 | 1 |" in text
    assert "| `000-§a.1` | a \\| b | tested | `tests/unit/t.py::x` fast |" in text
    assert "| `000-§a.2` | c | differs ([ADR](adr/0011-x.md)) |  |" in text
    assert text == render(clauses, {"000-§a.1": [Marked("tests/unit/t.py::x", True)]})


def test_check_when_stale_or_untested_fails_unless_allowed() -> None:
    assert judge("old", "new", [], allow_untested=True)[0] == 1
    code, said = judge("same", "same", ["000-§a.1"], allow_untested=False)
    assert code == 1
    assert "000-§a.1" in said
    assert judge("same", "same", ["000-§a.1"], allow_untested=True)[0] == 0
    assert judge("same", "same", [], allow_untested=False)[0] == 0


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this session collected every test: the table is judged on all of them."""
    narrowed = config.option.keyword or config.option.markexpr or config.option.deselect
    return config.args_source == pytest.Config.ArgsSource.TESTPATHS and not narrowed


def test_table_when_the_whole_suite_is_collected_is_current(request: pytest.FixtureRequest) -> None:
    # From the items this session collected anyway, so CI needs no second collection.
    if not _whole_suite(request.config):
        pytest.skip("judged only when the whole suite is collected (no paths, -k or -m)")
    clauses = load()
    tests = marked(request.session.items)
    untested = [cid for cid, c in clauses.items() if status(c, tests.get(cid, [])) == "untested"]
    current = TABLE.read_text(encoding="utf-8") if TABLE.is_file() else ""
    code, message = judge(current, render(clauses, tests), untested, allow_untested=False)
    assert code == 0, message
