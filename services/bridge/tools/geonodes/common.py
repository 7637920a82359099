"""What every ``gn.*`` tool shares: its target arguments and how it names its inverse."""

from __future__ import annotations

from typing import Any

from contracts.bridge import Compensation

GN_TREE = "GeometryNodeTree"


def target_args(args: dict[str, Any]) -> dict[str, Any]:
    return {"object": args["object"], "modifier": args["modifier"]}


def again(name: str, args: dict[str, Any]) -> Compensation:
    """The no-op inverse of a call that changed nothing: the same call."""
    return Compensation(tool=name, arguments=dict(args))


def restore(args: dict[str, Any], patch: dict[str, Any] | None) -> Compensation | None:
    if patch is None:
        return None
    return Compensation(tool="gn.restore_node", arguments={**target_args(args), **patch})
