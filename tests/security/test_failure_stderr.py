"""A crashed bridge's stderr stays in the executor's log, out of failure contracts (F).

Failure contracts reach API users and the model; Blender's stderr can hold paths,
tracebacks and whatever a tool printed. The bridge here is a stand-in interpreter that
writes a secret to stderr and dies, so the test needs no Blender.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from services.executor.adapters.bridge_client import BridgeCrashed, BridgeProcess
from services.executor.domain.failures import tool_failure

SECRET = "SECRET-token-/home/ana/.config/blendmesh"


@pytest.fixture
def dying_python(tmp_path: Path) -> Path:
    script = tmp_path / "python"
    # Wait after writing, so the client has drained stderr before it sees stdout close.
    script.write_text(f"#!/bin/sh\necho 'Traceback: {SECRET}' >&2\nsleep 0.5\nexit 3\n")
    script.chmod(0o700)
    return script


async def test_bridge_crash_when_stderr_written_message_omits_it_and_log_keeps_it(
    dying_python: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bridge = BridgeProcess(python=str(dying_python), call_timeout=10)
    with caplog.at_level(logging.INFO, logger="blendmesh.bridge"):
        with pytest.raises(BridgeCrashed) as info:
            await bridge.start()
        await bridge.close()
    message = str(info.value)
    assert SECRET not in message and "stderr" not in message
    assert "exit code 3" in message
    assert SECRET in caplog.text


async def test_failure_contract_when_bridge_crashed_carries_no_stderr(
    dying_python: Path,
) -> None:
    bridge = BridgeProcess(python=str(dying_python), call_timeout=10)
    with pytest.raises(BridgeCrashed) as info:
        await bridge.start()
    await bridge.close()
    contract = tool_failure("op1", "object.create", "internal_error", str(info.value))
    assert SECRET not in contract.retry_hint and "stderr" not in contract.retry_hint
