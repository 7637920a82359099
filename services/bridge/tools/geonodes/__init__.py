"""Geometry Nodes tools: one small, checked edit of a NODES modifier's node group each.

Spec 004's NODE_TREE and GN_OPS steps compile into these. Every tool names its target
by object and modifier; nodes are named by the plan's node id (the tools set a node's
name and label to it), and the group's own input and output nodes are ``group_input``
and ``group_output``. Each edit returns the call that undoes it; an edit that changed
nothing returns itself, a no-op then too, so a run of them still rolls back by
compensation. Where a node's state cannot be recorded (``bridge/node_state.py``) the
tool declares no compensation and the executor restores its checkpoint instead.

- ``target``: gn.ensure_target, gn.remove_target, gn.ensure_group_io, gn.set_group_io,
  gn.remove_group_io
- ``graph``: gn.add_node, gn.remove_node, gn.restore_node, gn.set_input, gn.set_property,
  gn.cleanup_unused
- ``links``: gn.link, gn.unlink
"""

from . import graph, links, target

__all__ = ["graph", "links", "target"]
