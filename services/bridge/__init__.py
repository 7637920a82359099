"""Blender bridge: the only process in blendmesh that imports ``bpy``.

It runs as a child process (``python -m services.bridge``) speaking
MCP/JSON-RPC 2.0 over stdio, so a Blender crash or hang can never take the
executor down with it. Importing this package must stay free of ``bpy`` so
that the executor can reference it without loading Blender.
"""
