"""The spec 002 §8 error classes: a failed run's code names its class, and the NDJSON stream
(§2) ends with an error line for every class, not only timeouts and unavailability."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from nats.errors import NoServersError

from contracts.events import RunRequested
from contracts.failures import ErrorCode
from services.doors.core.client import ClientError
from services.doors.core.ownership import NotOwned
from services.doors.gateway.agent import lines
from services.doors.gateway.errors import (
    FAILURE_TYPE,
    ApiError,
    AuthError,
    Conflict,
    InsufficientScope,
    InvalidToken,
    ModelError,
    NotFound,
    PolicyError,
    Timeout,
    ToolExecutionError,
    ValidationError,
    classify,
    status_of,
    type_name,
)

# 002 §8: which class each kind of failure is, by the words of the spec.
SPEC_CLASSES: dict[ErrorCode, type[ApiError]] = {
    "SCHEMA_INVALID": ValidationError,  # input schema issues
    "ARGS_INVALID": ValidationError,
    "POLICY_BLOCKED": PolicyError,  # blocked by policy
    "APPROVAL_REJECTED": PolicyError,
    "TOOL_ERROR": ToolExecutionError,  # provider/API failure
    "TOOL_TIMEOUT": ToolExecutionError,
    "MODEL_ERROR": ModelError,  # Gemini call/parsing failure
}


@pytest.mark.parametrize(("code", "kind"), SPEC_CLASSES.items())
@pytest.mark.clause("002-§errors.1", "002-§errors.3", "002-§errors.4", "002-§errors.5")
def test_failure_code_when_run_fails_is_its_spec_class(code: ErrorCode, kind: type) -> None:
    assert FAILURE_TYPE[code] is kind


@pytest.mark.clause("002-§errors.3")
def test_policy_blocked_when_answered_is_a_403_policy_error() -> None:
    error = FAILURE_TYPE["POLICY_BLOCKED"]("blocked")
    assert (status_of(error), type_name(type(error))) == (403, "PolicyError")


@pytest.mark.parametrize(
    ("raised", "kind", "status"),
    [
        (ValidationError("bad"), "ValidationError", 422),
        (AuthError("who"), "AuthError", 401),
        (InvalidToken("expired"), "AuthError", 401),
        (InsufficientScope("scope"), "AuthError", 403),
        (NotFound("none"), "NotFound", 404),
        (PolicyError("no"), "PolicyError", 403),
        (Conflict("stale"), "Conflict", 409),
        (ToolExecutionError("tool"), "ToolExecutionError", 502),
        (ModelError("model"), "ModelError", 502),
        (Timeout("late"), "Timeout", 504),
        (NotOwned("someone else's"), "NotFound", 404),
        (NoServersError(), "Unavailable", 503),
        (TimeoutError(), "Unavailable", 503),
        (RuntimeError("secret prompt text"), "ApiError", 500),
    ],
)
@pytest.mark.clause(
    "002-§errors.1",
    "002-§errors.2",
    "002-§errors.3",
    "002-§errors.4",
    "002-§errors.5",
    "002-§errors.6",
)
def test_classify_when_any_error_is_its_http_class(
    raised: Exception, kind: str, status: int
) -> None:
    error = classify(raised)
    assert (type_name(type(error)), status_of(error)) == (kind, status)
    assert "secret" not in str(error)  # an unexpected error's text never reaches a client


@dataclass
class _Client:
    """A mesh client whose run ends in ``error``: the stream's last line is what we test."""

    error: Exception

    async def run(self, request: RunRequested, on_event: Any = None, timeout: Any = None) -> Any:
        raise self.error


@dataclass
class _Gateway:
    client: _Client
    run_timeout: float = 1.0


REQUEST = RunRequested(
    event_id="e1", at=0.0, run_id="r1", request_id="q1", thread_id="t1", user="ana",
    scene_id="s1", prompt="add a cube",
)  # fmt: skip


async def _lines(error: Exception) -> list[dict[str, Any]]:
    gw: Any = _Gateway(_Client(error))
    return [json.loads(line) async for line in lines(gw, REQUEST)]


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (ClientError("no answer"), "Timeout"),
        (NoServersError(), "Unavailable"),
        (PolicyError("blocked by policy"), "PolicyError"),
        (ToolExecutionError("the tool failed"), "ToolExecutionError"),
        (ValueError("boom"), "ApiError"),
    ],
)
@pytest.mark.clause("002-§streaming.2", "002-§streaming.5")
async def test_stream_when_run_errors_ends_with_error_line_of_its_class(
    error: Exception, kind: str
) -> None:
    got = await _lines(error)
    assert got[0] == {"type": "status", "status": "planning", "threadId": "t1", "runId": "r1"}
    assert got[-1]["type"] == "error"
    assert got[-1]["errorType"] == kind
    assert got[-1]["error"]
    assert "boom" not in got[-1]["error"]
