"""The blendmesh services: each a small app wired in its own ``app.py``."""
