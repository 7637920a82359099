"""``blendmesh addon build [--output FILE]``: the Blender add-on as an installable zip.

The add-on's source is the ``blendmesh_addon`` package, which no service imports (it
imports ``bpy``): it is found, never imported. The zip holds one folder, ``blendmesh/``,
so Blender 4.2+ installs it as an extension (its ``blender_manifest.toml``) and older
Blenders as a classic add-on (its ``bl_info``). Entries carry a fixed date, so two builds
of the same source are the same bytes.
"""

from __future__ import annotations

import argparse
import importlib.util
import tomllib
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from contracts.errors import BlendmeshError

if TYPE_CHECKING:
    from rich.console import Console

SOURCE_PACKAGE = "blendmesh_addon"
FOLDER = "blendmesh"  # the module name Blender gives the add-on
MANIFEST = "blender_manifest.toml"
PACKED = {".py", ".toml"}
EPOCH = (2024, 1, 1, 0, 0, 0)  # zip entries need a date; a fixed one keeps builds equal


class AddonBuildError(BlendmeshError, ValueError):
    """The zip cannot be written where asked; the CLI prints it as a usage error."""


def source() -> Path:
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise AddonBuildError(f"the {SOURCE_PACKAGE} package is not installed with blendmesh")
    return Path(next(iter(spec.submodule_search_locations)))


def version(folder: Path) -> str:
    manifest = tomllib.loads((folder / MANIFEST).read_text())
    return str(manifest["version"])


def build(output: Path | None, folder: Path | None = None) -> Path:
    """Write the zip to ``output`` (a default name in the working directory when None)."""
    folder = folder or source()
    target = output or Path(f"blendmesh-addon-{version(folder)}.zip")
    if target.is_dir():
        raise AddonBuildError(f"--output {target} is a folder; name the zip file to write")
    if not target.parent.is_dir():
        raise AddonBuildError(f"--output {target}: folder {target.parent} does not exist")
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in PACKED and "__pycache__" not in p.parts
    )
    partial = target.with_name(target.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            name = f"{FOLDER}/{path.relative_to(folder).as_posix()}"
            entry = zipfile.ZipInfo(name, date_time=EPOCH)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            archive.writestr(entry, path.read_bytes())
    partial.replace(target)
    return target


def dispatch(args: argparse.Namespace, out: Console) -> int:
    written = build(args.output)
    out.print(f"wrote {written}", markup=False, highlight=False, soft_wrap=True)
    return 0
