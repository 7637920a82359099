"""The arguments of the commands for a shot's libraries (docs/studio.md): ``scenes
download`` and ``libraries [update]``."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def add_download(verbs: Any) -> None:
    """``scenes download SCENE [--revision N] [--to DIR]``."""
    down = verbs.add_parser(
        "download", help="write a revision of a scene and the library files it links to a folder"
    )
    down.add_argument("scene", help="the scene id")
    down.add_argument("--revision", type=int, help="the revision (the newest when left out)")
    down.add_argument("--to", type=Path, default=Path("."), help="the folder (default: here)")
    down.add_argument("--json", action="store_true", help="print the files written as JSON")


def add_libraries(sub: Any) -> None:
    """``libraries``, ``libraries update SCENE NAME REVISION`` and ``libraries publish
    SCENE NAME FILE``."""
    libraries = sub.add_parser(
        "libraries", help="your project's library revisions; `update`, `publish`"
    )
    libraries.add_argument("--json", action="store_true", help="print JSON")
    library_verbs = libraries.add_subparsers(dest="libraries_command")
    update = library_verbs.add_parser(
        "update", help="point a scene's links to a library at another revision of it"
    )
    update.add_argument("scene", help="the scene id")
    update.add_argument("name", help="the library's name (`blendmesh libraries` lists them)")
    update.add_argument("revision", type=int, help="the library revision to link")
    update.add_argument("--approve", action="store_true", help="pre-approve the update")
    update.add_argument("--json", action="store_true", help="print the run result as JSON")
    publish = library_verbs.add_parser(
        "publish",
        help="publish a .blend as a library's next revision and link it in a scene",
    )
    publish.add_argument("scene", help="the scene id (it links the library already)")
    publish.add_argument("name", help="the library's name (`blendmesh libraries` lists them)")
    publish.add_argument("file", type=Path, help="the library's .blend")
    publish.add_argument("--approve", action="store_true", help="pre-approve the update")
    publish.add_argument("--json", action="store_true", help="print the run result as JSON")
