"""requirements.lock, which CI installs from, pins every dependency pyproject.toml declares,
each at a version the declared range allows: a range changed without a new lock fails here.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
RELOCK = "uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements.lock"


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and "==" in line:
            name, version = line.split("==", 1)
            pins[canonicalize_name(name)] = version.split(";")[0].strip()
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries = list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])
    return [Requirement(entry) for entry in entries]


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    pins = _pins()
    wrong = []
    for requirement in _declared():
        pinned = pins.get(canonicalize_name(requirement.name))
        if pinned is None:
            wrong.append(f"{requirement.name} is not in the lock")
        elif not requirement.specifier.contains(pinned, prereleases=True):
            wrong.append(f"{requirement.name}=={pinned} is outside {requirement.specifier}")
    assert not wrong, f"{'; '.join(wrong)}: run `{RELOCK}`"


def test_the_lock_pins_exact_versions_only() -> None:
    loose = [
        line
        for line in (ROOT / "requirements.lock").read_text().splitlines()
        if line.strip() and not line.startswith(("#", " ")) and "==" not in line
    ]
    assert loose == []


def test_the_test_openid_provider_is_locked_at_the_version_its_package_names() -> None:
    # tests/support/oidc: CI installs it with `npm ci`, which installs the lock alone.
    here = ROOT / "tests" / "support" / "oidc"
    package = json.loads((here / "package.json").read_text())
    lock = json.loads((here / "package-lock.json").read_text())
    wanted = package["dependencies"]["oidc-provider"]
    assert lock["packages"]["node_modules/oidc-provider"]["version"] == wanted
