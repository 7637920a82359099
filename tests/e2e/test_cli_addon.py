"""``blendmesh addon build``: the installable zip of the Blender add-on."""

from __future__ import annotations

import ast
import subprocess
import tomllib
import zipfile
from pathlib import Path

from tests.support.meshes import BLENDMESH, command_env

SOURCE = Path(__file__).parents[2] / "blendmesh_addon"


def build(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BLENDMESH, "addon", "build", *args],
        capture_output=True,
        text=True,
        env=command_env(),
        cwd=cwd,
        timeout=60,
    )


def bl_info_version() -> tuple[int, ...]:
    tree = ast.parse((SOURCE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "bl_info":
            return tuple(ast.literal_eval(node.value)["version"])
    raise AssertionError("no bl_info")


def test_addon_build_when_output_given_writes_one_blendmesh_folder_twice_the_same(
    tmp_path: Path,
) -> None:
    done = build("--output", str(tmp_path / "a.zip"), cwd=tmp_path)
    again = build("--output", str(tmp_path / "b.zip"), cwd=tmp_path)
    assert done.returncode == 0 and again.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'a.zip'}" in done.stdout
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        names = archive.namelist()
        manifest = tomllib.loads(archive.read("blendmesh/blender_manifest.toml").decode())
    assert "blendmesh/__init__.py" in names and "blendmesh/gateway.py" in names
    assert all(n.startswith("blendmesh/") and "__pycache__" not in n for n in names)
    assert manifest["id"] == "blendmesh" and manifest["type"] == "add-on"
    assert tuple(int(p) for p in manifest["version"].split(".")) == bl_info_version()
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_addon_build_without_output_names_the_zip_by_version(tmp_path: Path) -> None:
    done = build(cwd=tmp_path)
    version = ".".join(str(p) for p in bl_info_version())
    assert done.returncode == 0, done.stderr
    assert (tmp_path / f"blendmesh-addon-{version}.zip").is_file()


def test_addon_build_when_output_folder_is_missing_or_a_folder_says_so(tmp_path: Path) -> None:
    missing = build("--output", str(tmp_path / "nope" / "a.zip"), cwd=tmp_path)
    folder = build("--output", str(tmp_path), cwd=tmp_path)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    assert list(tmp_path.iterdir()) == []
