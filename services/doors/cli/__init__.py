"""The ``blendmesh`` command."""
