"""docs/EXAMPLE_OUTPUTS.md's canonical examples (spec 003 §6) are what the code returns, byte
for byte once both are serialised with sorted keys; docs/guardians.md points to them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from services.guardians.orchestrator import FAILURE_CODES
from tests.support.guardian_samples import add_samples

DOCS = Path(__file__).resolve().parents[3] / "docs"
DOC = DOCS / "guardians.md"
EXAMPLES = DOCS / "EXAMPLE_OUTPUTS.md"  # the file 003 §6 names
EXAMPLE = re.compile(
    r"^### Example \d+: (?P<title>.+?)$.*?Input:\s*```json\n(?P<input>.*?)```"
    r"\s*Output:\s*```json\n(?P<output>.*?)```",
    re.MULTILINE | re.DOTALL,
)


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def examples() -> list[Any]:
    section = EXAMPLES.read_text(encoding="utf-8")
    found = [
        pytest.param(json.loads(m["input"]), json.loads(m["output"]), id=m["title"])
        for m in EXAMPLE.finditer(section)
    ]
    assert len(found) == section.count("### Example ")
    return found


@pytest.fixture(autouse=True)
def _samples(monkeypatch: pytest.MonkeyPatch) -> None:
    add_samples(monkeypatch)


@pytest.mark.parametrize(("given", "expected"), examples())
@pytest.mark.clause("003-§examples.1")
def test_doc_example_is_what_run_guardians_returns(
    given: dict[str, Any], expected: dict[str, Any]
) -> None:
    """003 §6: the canonical examples are part of the contract."""
    assert canonical(run_guardians(given["repo_path"], given["guardians"])) == canonical(expected)


@pytest.mark.clause("003-§examples.1")
def test_doc_examples_cover_every_failure_code_and_a_pass() -> None:
    """003 §6 for this project: a passing run, each code, duplicates, an invalid path."""
    shown = {entry["details"] for param in examples() for entry in param.values[1]["guardians"]}
    assert shown == {"ok", *FAILURE_CODES}
    assert any(param.values[1]["guardians"] == [] for param in examples())


@pytest.mark.clause("003-§examples.1")
def test_guardians_doc_links_the_examples_file() -> None:
    """003 §6 names docs/EXAMPLE_OUTPUTS.md; the guardians' own doc leads a reader there."""
    assert "(EXAMPLE_OUTPUTS.md)" in DOC.read_text(encoding="utf-8")
    assert "### Example " not in DOC.read_text(encoding="utf-8")


def test_doc_lists_every_guardian_of_the_routing_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    for guardian_id in GUARDIAN_ROUTING_TABLE:
        if not guardian_id.startswith("sample_"):
            assert f"| `{guardian_id}` |" in text
