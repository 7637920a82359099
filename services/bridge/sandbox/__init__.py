"""The OS sandbox that spec 004 PYTHON steps run in (docs/python-steps.md, ADR 0009).

Two halves share this package. ``box``, ``seccomp`` and ``pool`` run in the bridge: they
build the bubblewrap command line and keep one warm sandboxed Blender ready. ``child``,
``restricted`` and ``facade`` run inside the sandbox, where this directory is the only
blendmesh code visible: they import the standard library, bpy and RestrictedPython, and
each other, never the rest of blendmesh. This file must stay free of imports for that.
"""
