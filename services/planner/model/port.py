"""The port to a language model that writes plans, and the one error it raises.

The planner's domain talks to ``ModelClient`` only; ``model/gemini.py`` is the adapter
on google-genai, and tests script answers with an in-memory fake or a local server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from contracts.errors import BlendmeshError

Role = Literal["user", "model"]


@dataclass(frozen=True)
class Turn:
    """One turn of the conversation sent to the model."""

    role: Role
    text: str


@dataclass(frozen=True)
class ModelRequest:
    """Everything one model call gets: nothing else leaves blendmesh."""

    system: str  # persona, policy and the tool catalog
    contents: tuple[Turn, ...]  # thread history, the request, earlier answers and failures
    response_schema: dict[str, Any]  # JSON Schema the answer is constrained to


@dataclass(frozen=True)
class ModelReply:
    text: str  # the raw answer: the planner parses and validates it
    model: str  # the model (version) that answered
    finish_reason: str | None = None


ModelErrorKind = Literal["unavailable", "auth", "bad_request", "blocked", "refused"]

# Whether a later run of the same request may succeed (spec 000 ``recoverable``).
_RECOVERABLE: dict[str, bool] = {
    "unavailable": True,  # rate limited or down: the same request can succeed later
    "auth": False,
    "bad_request": False,
    "blocked": False,
    "refused": False,
}


class ModelError(BlendmeshError):
    """A model call that produced no answer to parse (spec 002 §8 ``ModelError``).

    ``message`` is safe to show and to log: it never holds prompt text or credentials.
    Malformed answers are not ModelErrors: they go back to the model as plan failures.
    """

    def __init__(self, kind: ModelErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def recoverable(self) -> bool:
        return _RECOVERABLE[self.kind]


class ModelClient(Protocol):
    """Port: one structured-output call of a language model."""

    async def generate(self, request: ModelRequest) -> ModelReply:
        """Answer ``request``; raise ``ModelError`` when there is no answer to parse."""
        ...
