"""README is a quickstart and the docs hold the rest: links resolve, commands parse.

A page moved or a heading renamed breaks a link nobody clicks until a newcomer does; a
flag renamed leaves a command in the docs that no longer runs. Both are checked here,
without starting anything: a command is parsed by the CLI's own parser, not run.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from services.doors.cli.main import parser

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 12 * 1024  # a quickstart, not a manual
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
COMMAND = re.compile(r"(?:^|\s)\.venv/bin/blendmesh\s+([^\n#|]*)")


def _relative(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as -."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"^(https?:|mailto:)", t)]


def test_readme_when_measured_is_a_quickstart_of_at_most_12_kib() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes: move detail to a docs page"


@pytest.mark.parametrize("page", PAGES, ids=_relative)
def test_page_when_its_links_are_followed_finds_each_file_and_heading(page: Path) -> None:
    broken = []
    for target in _links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists():
            broken.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{target}: no heading #{anchor} in {where.name}")
    assert not broken, f"{_relative(page)}: " + "; ".join(broken)


def _commands() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for block in FENCE.findall(page.read_text()):
            joined = block.replace("\\\n", " ")
            for line in COMMAND.findall(joined):
                found.append((_relative(page), line.strip()))
    return found


def test_docs_when_read_show_blendmesh_commands_to_check() -> None:
    pages = {page for page, _ in _commands()}
    assert "README.md" in pages and len(_commands()) >= 10


@pytest.mark.parametrize(("page", "line"), _commands(), ids=lambda v: v[:60])
def test_command_when_parsed_as_written_is_one_the_cli_takes(page: str, line: str) -> None:
    words = [w for w in shlex.split(line) if w != "..."]
    if any(re.fullmatch(r"[A-Z_]+|\$\w+|<.*>", w) for w in words[:1]):
        pytest.fail(f"{page}: {line!r} starts with a placeholder")
    try:
        parser().parse_args(words)
    except SystemExit as exc:  # argparse's way of refusing
        raise AssertionError(f"{page}: `blendmesh {line}` is not a command the CLI takes") from exc


def test_ci_when_it_installs_runs_readme_install_command_as_written() -> None:
    readme = (ROOT / "README.md").read_text()
    install = re.search(r"## Install\n.*?```sh\n(.*?)\n```", readme, re.S)
    assert install, "README has no install command"
    pip = install.group(1).split("&& ", 1)[1]  # after making the venv
    ci = (ROOT / ".ci" / "run").read_text()
    assert pip.replace("pip install", "pip install --quiet") in ci, pip
