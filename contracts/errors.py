"""The root of every error blendmesh raises on purpose.

A door catches ``BlendmeshError`` to tell a person what went wrong in words; anything else
that escapes is a bug and is reported as one. Each error keeps the builtin class it had
(``ValueError``, ``ConnectionError``, ...) as a second base, so code that caught those
still does. The Python sandbox's own errors are the exception: they are raised inside a
confined Blender that imports as little as it can, and cross back only as text.
"""

from __future__ import annotations


class BlendmeshError(Exception):
    """An error blendmesh raises on purpose; its message says what was wrong and what to do."""
