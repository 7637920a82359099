"""The guardians: checks of a committed revision, run by spec 003's orchestrator.

``run_guardians`` is the one tool of 003 V1; ``GUARDIAN_ROUTING_TABLE`` names every
guardian it can run. Importing this package is cheap on purpose (no ``nats``, no ``mcp``,
no ``bpy``): a guardian's module is imported only when a run asks for it.
"""

from services.guardians.orchestrator import run_guardians
from services.guardians.routing import GUARDIAN_ROUTING_TABLE

__all__ = ["GUARDIAN_ROUTING_TABLE", "run_guardians"]
