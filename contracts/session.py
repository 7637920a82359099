"""The session contract of spec 001: host profile x Blender profile, plus what the caller
asked of determinism and what the operator allows.

Every door that turns a person's words or plan into a ``RunRequested`` declares the host
it is (its transport and that transport's limits) on the request; the executor's bridge
declares its Blender. The executor negotiates the two into one ``SessionContract`` per run
and the capability gate (``services/executor/domain/capability.py``) judges every operation
against it before anything runs.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.bridge import BlenderProfile
from contracts.tools import DeterminismClass

Transport = Literal["mcp_stdio", "mcp_http", "http", "bus", "cli"]
# "any": every determinism class may run. "required": the caller asks for a result it can
# reproduce (001 §Determinism Requirements): deterministic and seeded tools run (a seeded
# one with its seed pinned and recorded), a nondeterministic one is refused with
# ``nondeterministic_refused``.
DeterminismRequest = Literal["any", "required"]
REPRODUCIBLE: frozenset[DeterminismClass] = frozenset({"deterministic", "seeded"})


class HostProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the host a request came through can carry (001 §Core Concepts: Host Profile).

    ``max_payload_bytes``: the largest message the transport carries in one piece, so an
    operation whose arguments alone exceed it could never have been answered whole.
    ``streaming``: the host shows progress while a run goes on. ``cancellation``: the host
    can cancel a call it started; no blendmesh door can stop an approved run (a busy
    Blender cannot interrupt itself), so each says so rather than pretend."""

    transport: Transport
    max_payload_bytes: Annotated[int, msgspec.Meta(ge=1)]
    streaming: bool
    cancellation: bool


_MIB = 1024 * 1024
# What each door declares. Every request becomes one event on the bus, so no door carries
# more than NATS's default max_payload (the HTTP door's default body limit,
# BLENDMESH_MAX_BODY_BYTES, is the same MiB). Every door shows a run's progress as it
# goes: MCP as progress notifications, HTTP as its NDJSON stream, the bus door as the
# user's feed (docs/bus.md), the CLI on the terminal.
MCP_STDIO = HostProfile(
    transport="mcp_stdio", max_payload_bytes=_MIB, streaming=True, cancellation=False
)
MCP_HTTP = HostProfile(
    transport="mcp_http", max_payload_bytes=_MIB, streaming=True, cancellation=False
)
HTTP = HostProfile(transport="http", max_payload_bytes=_MIB, streaming=True, cancellation=False)
BUS = HostProfile(transport="bus", max_payload_bytes=_MIB, streaming=True, cancellation=False)
CLI = HostProfile(transport="cli", max_payload_bytes=_MIB, streaming=True, cancellation=False)
HOSTS: dict[Transport, HostProfile] = {
    h.transport: h for h in (MCP_STDIO, MCP_HTTP, HTTP, BUS, CLI)
}


class SessionContract(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The negotiated constraints one run executes under (001 §Core Concepts: Contract)."""

    host: HostProfile
    blender: BlenderProfile
    determinism: DeterminismRequest = "any"
    allow_unsafe: bool = False  # the operator's opt-in to tools tagged unsafe_ops

    def honours(self, declared: DeterminismClass) -> bool:
        """Whether a tool of the ``declared`` class may run under this contract."""
        return self.determinism == "any" or declared in REPRODUCIBLE


def negotiate(
    host: HostProfile,
    blender: BlenderProfile,
    *,
    determinism: DeterminismRequest = "any",
    allow_unsafe: bool = False,
) -> SessionContract:
    """The contract of a run: what the host carries, what the Blender can do, what the
    caller asked of determinism and whether the operator allows unsafe_ops tools."""
    return SessionContract(
        host=host, blender=blender, determinism=determinism, allow_unsafe=allow_unsafe
    )
