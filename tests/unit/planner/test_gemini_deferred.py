"""The planner imports google-genai on its first model call, not when it starts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator

import pytest

from services.planner.model.deferred import DeferredGemini
from services.planner.model.port import ModelError, ModelRequest, Turn
from services.planner.settings import GeminiSettings
from tests.support.gemini_fake import FakeGemini, answer, error, running

REQUEST = ModelRequest(system="plan", contents=(Turn("user", "add a cube"),), response_schema={})


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with running() as server:
        yield server


def test_planner_when_started_without_a_call_has_not_imported_the_sdk() -> None:
    # A fresh process: this one may have imported the SDK for another test.
    code = (
        "import sys\n"
        "import services.planner.app, services.doors.cli.mesh\n"
        "from services.planner.model.deferred import DeferredGemini\n"
        "from services.planner.settings import GeminiSettings\n"
        "DeferredGemini(GeminiSettings())\n"
        "print(sorted(m for m in sys.modules if m.startswith('google')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


async def test_deferred_gemini_when_first_called_answers_through_the_sdk(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    fake.script(answer('{"operations": []}'), answer("{}"))
    model = DeferredGemini(GeminiSettings(base_url=fake.url, max_retries=0))
    try:
        first, second = await asyncio.gather(model.generate(REQUEST), model.generate(REQUEST))
    finally:
        await model.aclose()
    assert {first.text, second.text} == {'{"operations": []}', "{}"}
    assert [r.api_key for r in fake.requests] == ["test-key", "test-key"]


async def test_deferred_gemini_when_the_model_refuses_raises_its_model_error(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "bad-key")
    fake.script(error(403, "PERMISSION_DENIED", "no"))
    model = DeferredGemini(GeminiSettings(base_url=fake.url, max_retries=0))
    try:
        with pytest.raises(ModelError) as caught:
            await model.generate(REQUEST)
    finally:
        await model.aclose()
    assert caught.value.kind == "auth"


async def test_deferred_gemini_when_closed_before_any_call_closes_nothing() -> None:
    model = DeferredGemini(GeminiSettings())
    await model.aclose()
    await model.aclose()  # twice, as a service's closers may run after a failed start
