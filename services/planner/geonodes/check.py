"""A 004 response checked against the node catalog before anything touches a scene.

Every op is checked in order against the tree the response builds so far, one tree per
object and modifier. A problem is refused with the spec 000 failure contract: its hint
names the step, the op (``operations[2]`` of a NODE_TREE payload, ``ops[2]`` of GN_OPS)
and what would be valid, with a "did you mean" from the catalog's names. Pure: no I/O.

Which node ids an op may name:

- ``group_input`` and ``group_output``, the group's own nodes, always;
- a node an earlier op of the response created on the same object and modifier (and did
  not delete since);
- in a GN_OPS step only, any other id: GN_OPS patches a tree that may already hold nodes,
  so such a node is presumed to be in the scene, and only the bridge can check it (its
  sockets and values are not checked here). A NODE_TREE step describes its tree whole:
  there, an unknown id is refused.

The group's sockets are known where a NODE_TREE step made the tree: ``Geometry`` in and
out, plus what ``set_group_io`` declares. On a tree only GN_OPS steps touched, the group's
sockets are the scene's, and any name is let through to the bridge. Which links hold and
which values a socket takes is ``geonodes_values``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contracts.failures import failure
from contracts.geonodes import (
    GROUP_INPUT,
    GROUP_OUTPUT,
    AddNode,
    CreateNode,
    DeleteNode,
    GeoNodeResponse,
    GnLink,
    GnOpsStep,
    GnUnlink,
    Link,
    NodeTreeStep,
    RemoveNode,
    SetGroupIO,
    SetInput,
    SetInputDefault,
    SetProperty,
    Unlink,
    op_name,
    operation_id,
)
from contracts.nodes import NodeCatalog, NodeSpec, SocketSpec, find_socket
from services.planner.geonodes_values import (
    CONVERTS,
    IDNAME_KINDS,
    links,
    property_problem,
    socket_kind,
    value_problem,
)
from services.planner.graph import PlanInvalid

_GROUP_NODES = {GROUP_INPUT: "NodeGroupInput", GROUP_OUTPUT: "NodeGroupOutput"}


def did_you_mean(word: str, candidates: Iterable[str] | Mapping[str, str]) -> str:
    """`` (did you mean 'X'?)`` naming the closest candidates, compared without case; a
    mapping's values are what is named (a node label -> its bl_idname)."""
    shown = candidates if isinstance(candidates, Mapping) else {c: c for c in candidates}
    by_lower: dict[str, str] = {}
    for candidate, name in shown.items():
        by_lower.setdefault(candidate.lower(), name)
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=3, cutoff=0.6)
    picks = list(dict.fromkeys(by_lower[c] for c in close))
    return " (did you mean " + " or ".join(map(repr, picks)) + "?)" if picks else ""


def _listing(names: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


@dataclass
class _Tree:
    """What the response has built so far on one object's modifier."""

    group: str | None  # the node group a NODE_TREE step named; None for GN_OPS only
    nodes: dict[str, str] = field(default_factory=dict)  # node id -> bl_idname
    inputs: dict[str, str | None] = field(default_factory=dict)  # group interface
    outputs: dict[str, str | None] = field(default_factory=dict)
    # Whether the group's sockets are all known: a tree a NODE_TREE step made first.
    known_interface: bool = False


@dataclass(frozen=True)
class _Where:
    """One op of the response, for messages and the repair plan."""

    step: str
    path: str  # "operations[2]" or "ops[2]"
    op: str
    operation_id: str

    def refuse(self, code: Any, problem: str) -> PlanInvalid:
        said = f"step {self.step}, {self.path} ({self.op}): {problem}"
        return PlanInvalid(
            failure(code, f"Fix {said}", repair=[(self.operation_id, "replace_args")]),
            f"the Geometry Nodes response cannot run: {said}",
        )


def check_response(response: GeoNodeResponse, catalog: NodeCatalog) -> None:
    """Raise ``PlanInvalid`` (ARGS_INVALID or TOOL_UNKNOWN) at the first op that cannot
    run on this catalog's Blender; PYTHON steps are not looked at here."""
    trees: dict[tuple[str, str], _Tree] = {}
    for step in response.steps:
        if isinstance(step, NodeTreeStep):
            _tree_step(step, trees, catalog)
        elif isinstance(step, GnOpsStep):
            _gn_step(step, trees, catalog)


def _tree_step(step: NodeTreeStep, trees: dict[tuple[str, str], _Tree], nodes: NodeCatalog) -> None:
    target = step.payload.target
    key = (target.object_name, target.modifier_name)
    tree = trees.get(key)
    if tree is not None and tree.group not in (None, target.node_group_name):
        raise PlanInvalid(
            failure(
                "ARGS_INVALID",
                f"Fix step {step.id}: modifier {target.modifier_name!r} of "
                f"{target.object_name!r} shows node group {tree.group!r} from an earlier step; "
                "name the same node_group_name, or use another modifier",
                repair=[
                    (operation_id(step.id, 1, len(step.payload.operations) + 1), "replace_args")
                ],
            ),
            f"the Geometry Nodes response cannot run: step {step.id} names node group "
            f"{target.node_group_name!r} for a modifier an earlier step gave {tree.group!r}",
        )
    if tree is None:
        tree = trees[key] = _Tree(
            group=target.node_group_name,
            inputs={"Geometry": "GEOMETRY"},
            outputs={"Geometry": "GEOMETRY"},
            known_interface=True,
        )
    tree.group = target.node_group_name
    checker = _Checker(nodes, tree, strict=True)
    count = len(step.payload.operations) + 1  # gn.ensure_target is the step's first call
    for index, op in enumerate(step.payload.operations):
        op_id = operation_id(step.id, index + 2, count)
        checker.tree_op(op, _Where(step.id, f"operations[{index}]", op_name(op), op_id))


def _gn_step(step: GnOpsStep, trees: dict[tuple[str, str], _Tree], nodes: NodeCatalog) -> None:
    target = step.payload.target
    tree = trees.setdefault((target.object_name, target.modifier_name), _Tree(group=None))
    checker = _Checker(nodes, tree, strict=False)
    count = len(step.payload.ops)
    for index, op in enumerate(step.payload.ops):
        op_id = operation_id(step.id, index + 1, count)
        checker.gn_op(op, _Where(step.id, f"ops[{index}]", op_name(op), op_id))


@dataclass
class _Checker:
    catalog: NodeCatalog
    tree: _Tree
    strict: bool  # NODE_TREE: every node id must be known

    def tree_op(self, op: Any, where: _Where) -> None:
        match op:
            case CreateNode():
                self._create(op.node_id, op.bl_idname, where)
            case DeleteNode():
                self._node(op.node_id, where)
                self.tree.nodes.pop(op.node_id, None)
            case SetInputDefault():
                self._set_input(op.node_id, op.socket, op.value, where)
            case SetProperty():
                self._set_property(op.node_id, op.property, op.value, where)
            case Link():
                self._link(op.from_.node_id, op.from_.socket, op.to.node_id, op.to.socket, where)
            case Unlink():
                self._unlink(op.from_.node_id, op.from_.socket, op.to.node_id, op.to.socket, where)
            case SetGroupIO():
                self._group_io(op, where)

    def gn_op(self, op: Any, where: _Where) -> None:
        match op:
            case AddNode():
                self._create(op.id, op.bl_idname, where)
            case RemoveNode():
                self._node(op.node_id, where)
                self.tree.nodes.pop(op.node_id, None)
            case SetInput():
                self._set_input(op.node_id, op.socket_name, op.value, where)
            case GnLink():
                self._link(op.from_node, op.from_socket, op.to_node, op.to_socket, where)
            case GnUnlink():
                self._unlink(op.from_node, op.from_socket, op.to_node, op.to_socket, where)

    # -- nodes ---------------------------------------------------------------------
    def _create(self, node_id: str, bl_idname: str, where: _Where) -> None:
        if node_id in _GROUP_NODES:
            raise where.refuse(
                "ARGS_INVALID",
                f"{node_id!r} is the group's own node and always exists; give the new node "
                "another id",
            )
        if node_id in self.tree.nodes:
            raise where.refuse(
                "ARGS_INVALID",
                f"node id {node_id!r} is taken by an earlier {self.tree.nodes[node_id]} on "
                "this tree; give each node its own id",
            )
        if bl_idname in _GROUP_NODES.values():
            raise where.refuse(
                "ARGS_INVALID",
                f"{bl_idname} is the group's own node: name it {GROUP_INPUT!r} or "
                f"{GROUP_OUTPUT!r} instead of creating one (ensure_single_group_io keeps one "
                "of each)",
            )
        if bl_idname not in self.catalog.nodes:
            names = {name: name for name in self.catalog.nodes}
            labels = {spec.label: name for name, spec in self.catalog.nodes.items()}
            guess = did_you_mean(bl_idname, {**labels, **names})
            raise where.refuse(
                "TOOL_UNKNOWN",
                f"{bl_idname!r} is not a node type of Blender {self.catalog.blender_version}"
                f"{guess}",
            )
        self.tree.nodes[node_id] = bl_idname

    def _node(self, node_id: str, where: _Where) -> NodeSpec | None:
        """The spec of a node the op may name; None when it is presumed in the scene."""
        if node_id in _GROUP_NODES:
            return self.catalog.nodes.get(_GROUP_NODES[node_id])
        if node_id in self.tree.nodes:
            return self.catalog.nodes.get(self.tree.nodes[node_id])
        if not self.strict:
            return None
        known = [*self.tree.nodes, *_GROUP_NODES]
        raise where.refuse(
            "ARGS_INVALID",
            f"no earlier op of this response creates node {node_id!r}"
            f"{did_you_mean(node_id, known)}; a NODE_TREE step names only nodes it creates "
            f"and group_input/group_output (known here: {_listing(known)})",
        )

    # -- sockets -------------------------------------------------------------------
    def _socket(self, node_id: str, name: str, side: str, where: _Where) -> str | None:
        """The type of ``node_id``'s ``side`` ("input"/"output") socket ``name``; None when
        it cannot be known here. Raises when the node has no such socket."""
        spec = self._node(node_id, where)
        if node_id in _GROUP_NODES:
            return self._group_socket(node_id, name, side, where)
        if spec is None:
            return None
        mine, other = (
            (spec.inputs, spec.outputs) if side == "input" else (spec.outputs, spec.inputs)
        )
        found = find_socket(mine, name)
        if found is not None:
            return found.type
        names = _names(mine)
        if find_socket(other, name) is not None:
            problem = (
                f"{name!r} is an {'output' if side == 'input' else 'input'} of {spec.bl_idname}, "
                f"not an {side}"
            )
        else:
            problem = f"{spec.bl_idname} has no {side} socket {name!r}{did_you_mean(name, names)}"
        raise where.refuse("ARGS_INVALID", f"{problem}; its {side}s: {_listing(names) or 'none'}")

    def _group_socket(self, node_id: str, name: str, side: str, where: _Where) -> str | None:
        # group_input's sockets are outputs showing the interface's inputs, and the reverse.
        proper = "output" if node_id == GROUP_INPUT else "input"
        if side != proper:
            raise where.refuse(
                "ARGS_INVALID",
                f"{node_id} has only {proper} sockets: link "
                + ("from group_input" if node_id == GROUP_INPUT else "to group_output"),
            )
        if not self.tree.known_interface:
            return None
        interface = self.tree.inputs if node_id == GROUP_INPUT else self.tree.outputs
        if name in interface:
            return interface[name]
        names = list(interface)
        raise where.refuse(
            "ARGS_INVALID",
            f"the group has no {'input' if node_id == GROUP_INPUT else 'output'} {name!r}"
            f"{did_you_mean(name, names)}; it has {_listing(names) or 'none'} "
            "(declare more with set_group_io)",
        )

    def _set_input(self, node_id: str, socket: str, value: Any, where: _Where) -> None:
        if node_id in _GROUP_NODES:
            raise where.refuse(
                "ARGS_INVALID",
                f"{node_id}'s sockets hold no values of their own; set a value on the node "
                "that reads them, or link a node to them",
            )
        kind = self._socket(node_id, socket, "input", where)
        spec = self._node(node_id, where)
        found = find_socket(spec.inputs, socket) if spec is not None else None
        problem = value_problem(kind, value, found) if kind is not None else None
        if problem:
            raise where.refuse("ARGS_INVALID", f"input {socket!r} of {node_id}: {problem}")

    def _link(
        self, from_node: str, from_socket: str, to_node: str, to_socket: str, where: _Where
    ) -> None:
        from_kind = self._socket(from_node, from_socket, "output", where)
        to_kind = self._socket(to_node, to_socket, "input", where)
        if not links(from_kind, to_kind):
            reach = sorted(CONVERTS.get(from_kind or "", set()) | {from_kind or ""})
            raise where.refuse(
                "ARGS_INVALID",
                f"{from_node}.{from_socket} is {from_kind} and {to_node}.{to_socket} is "
                f"{to_kind}: Blender does not convert {from_kind} to {to_kind}; link it to a "
                f"socket of type {' or '.join(reach)}",
            )

    def _unlink(
        self, from_node: str, from_socket: str, to_node: str, to_socket: str, where: _Where
    ) -> None:
        self._socket(from_node, from_socket, "output", where)
        self._socket(to_node, to_socket, "input", where)

    def _group_io(self, op: SetGroupIO, where: _Where) -> None:
        kind = socket_kind(op.socket_type)
        if op.socket_type not in IDNAME_KINDS:
            raise where.refuse(
                "ARGS_INVALID",
                f"socket_type {op.socket_type!r} is not a group socket type"
                f"{did_you_mean(op.socket_type, list(IDNAME_KINDS))}; use one of "
                f"{_listing(sorted(IDNAME_KINDS), 20)}",
            )
        side = self.tree.inputs if op.in_out == "INPUT" else self.tree.outputs
        side[op.name] = kind

    # -- properties ----------------------------------------------------------------
    def _set_property(self, node_id: str, prop: str, value: Any, where: _Where) -> None:
        spec = self._node(node_id, where)
        if spec is None:
            return
        found = spec.find_property(prop)
        if found is None:
            names = [p.identifier for p in spec.properties]
            raise where.refuse(
                "ARGS_INVALID",
                f"{spec.bl_idname} has no property {prop!r}{did_you_mean(prop, names)}; "
                f"its properties: {_listing(names) or 'none'}",
            )
        items = list(found.enum_items)
        chosen = value if isinstance(value, list) else [value]  # an enum flag takes a list
        wrong = next((v for v in chosen if v not in items), None) if items else None
        if found.type == "ENUM" and (wrong is not None or not chosen):
            guess = did_you_mean(wrong, items) if isinstance(wrong, str) else ""
            raise where.refuse(
                "ARGS_INVALID",
                f"{wrong!r} is not an item of {spec.bl_idname}.{prop}{guess}; "
                f"items: {_listing(items, 50)}",
            )
        problem = property_problem(found.type, value)
        if problem:
            raise where.refuse("ARGS_INVALID", f"property {prop!r} of {node_id}: {problem}")


def _names(sockets: Sequence[SocketSpec]) -> list[str]:
    """The enabled sockets' names, with the identifier where a name repeats (Math's
    ``Value_001``)."""
    shown = [s for s in sockets if s.enabled]
    counts: dict[str, int] = {}
    for s in shown:
        counts[s.name] = counts.get(s.name, 0) + 1
    return [s.name if counts[s.name] == 1 else s.identifier for s in shown]
