"""Entry point: ``python -m services.bridge``.

The protocol stream is a private duplicate of the original stdout; fd 1 is
then pointed at stderr *before* bpy is imported, so anything Blender (or an
add-on) prints can never corrupt a JSON-RPC line.
"""

from __future__ import annotations

import os
import sys

proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)

import logging  # noqa: E402 - must follow the fd swap above

import bpy  # noqa: E402

from . import tools  # noqa: E402,F401 - importing registers every tool
from .server import Server  # noqa: E402


def main() -> int:
    """Start from an empty factory scene and serve until EOF or shutdown."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    bpy.ops.wm.read_factory_settings(use_empty=True)
    server = Server(proto_out)
    try:
        server.serve(sys.stdin.buffer)
    except KeyboardInterrupt:
        pass
    finally:
        proto_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
