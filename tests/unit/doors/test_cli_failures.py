"""Every failure a person can act on reads as one line and an exit code, never a
traceback: nats-py's own errors included."""

from __future__ import annotations

import nats.errors
import pytest
from nats.js.errors import APIError, ServiceUnavailableError

from services.doors.cli.common import EXIT_MESH, EXIT_USAGE
from services.doors.cli.failures import exit_code_for
from services.doors.core.client import ClientError


def test_nats_timeout_when_mesh_is_silent_says_which_side_and_what_to_run() -> None:
    code, said = exit_code_for(nats.errors.TimeoutError()) or (0, "")
    assert code == EXIT_MESH and "did not answer in time" in said and "blendmesh status" in said


def test_store_full_when_jetstream_refuses_names_storage_and_the_fix() -> None:
    full = ServiceUnavailableError(code=503, err_code=10023, description="insufficient resources")
    code, said = exit_code_for(full) or (0, "")
    assert code == EXIT_MESH
    assert "JetStream's store is full" in said and "BLENDMESH_MAX_FILE_STORE" in said


def test_other_jetstream_refusal_when_raised_quotes_its_description() -> None:
    refused = APIError(code=400, err_code=10058, description="stream name already in use")
    assert exit_code_for(refused) == (
        EXIT_MESH,
        "JetStream refused the request: stream name already in use",
    )


def test_no_responders_when_nothing_answers_says_so() -> None:
    code, said = exit_code_for(nats.errors.NoRespondersError()) or (0, "")
    assert code == EXIT_MESH and "nothing on the mesh answers" in said


def test_usage_error_when_raised_keeps_its_words() -> None:
    assert exit_code_for(ClientError("give --plan FILE")) == (EXIT_USAGE, "give --plan FILE")


@pytest.mark.parametrize("bug", [KeyError("x"), AttributeError("y"), ZeroDivisionError()])
def test_bug_when_raised_keeps_its_traceback(bug: Exception) -> None:
    assert exit_code_for(bug) is None
