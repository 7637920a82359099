"""The gemini adapter: the real google-genai client against a local Gemini-speaking server."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest

from services.planner.model.gemini import GeminiModel
from services.planner.model.port import ModelError, ModelRequest, Turn
from services.planner.model.prompt import PlanContext, build_request
from services.planner.model.retry import RetryPolicy
from tests.support.catalog_fixture import CATALOG
from tests.support.gemini_fake import (
    FakeGemini,
    Reply,
    answer,
    error,
    op,
    plan,
    prompt_blocked,
    running,
    safety_blocked,
)

KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT")
PROMPT = "add a cube named SecretBox"


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with running() as server:
        yield server


class Clock:
    """A fake monotonic clock that ``sleep`` advances: retries run instantly."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
async def clock() -> Clock:
    return Clock()


@pytest.fixture
async def model(fake: FakeGemini, clock: Clock) -> AsyncIterator[GeminiModel]:
    gemini = GeminiModel(
        "gemini-2.5-flash",
        base_url=fake.url,
        api_key="test-key",
        retry=RetryPolicy(max_retries=3, base_delay=1.0, max_delay=8.0, deadline=60.0),
        sleep=clock.sleep,
        clock=clock,
        rng=lambda: 0.5,
    )
    try:
        yield gemini
    finally:
        await gemini.aclose()


def request() -> ModelRequest:
    return build_request(PlanContext("r1", "q1", "s1", PROMPT), CATALOG, None, [])


async def test_gemini_when_answer_ok_returns_text_and_sends_reproducible_config(
    fake: FakeGemini, model: GeminiModel
) -> None:
    fake.script(plan(op("op01", "object.create", {"primitive": "cube"})))
    reply = await model.generate(request())
    assert '"op01"' in reply.text and reply.model == "gemini-2.5-flash"
    assert reply.finish_reason == "STOP"
    (sent,) = fake.requests
    assert sent.model == "gemini-2.5-flash" and sent.api_key == "test-key"
    config = sent.body["generationConfig"]
    assert config["temperature"] == 0.0 and config["seed"] == 0
    assert config["candidateCount"] == 1 and config["responseMimeType"] == "application/json"
    assert "args_json" in str(config["responseJsonSchema"])
    assert "tools" not in sent.body  # no function calling: the answer is the plan
    assert PROMPT in sent.turns[-1] and "object.create" in sent.system


async def test_gemini_when_reply_names_model_version_reports_it(
    fake: FakeGemini, model: GeminiModel
) -> None:
    fake.script(answer("{}", model="gemini-2.5-flash-002"))
    assert (await model.generate(request())).model == "gemini-2.5-flash-002"


async def test_gemini_when_429_then_ok_retries_after_backoff(
    fake: FakeGemini, model: GeminiModel, clock: Clock
) -> None:
    fake.script(error(429, "RESOURCE_EXHAUSTED", "quota"), answer("{}"))
    assert (await model.generate(request())).text == "{}"
    assert len(fake.requests) == 2 and clock.sleeps == [0.75]  # 1 s step, equal jitter 0.5


async def test_gemini_when_429_carries_retry_info_waits_at_least_that(
    fake: FakeGemini, model: GeminiModel, clock: Clock
) -> None:
    fake.script(error(429, "RESOURCE_EXHAUSTED", "quota", retry_delay="5s"), answer("{}"))
    await model.generate(request())
    assert clock.sleeps == [5.0]


async def test_gemini_when_transient_errors_persist_gives_up_after_max_retries(
    fake: FakeGemini, model: GeminiModel, clock: Clock
) -> None:
    fake.script(*[error(503, "UNAVAILABLE", "overloaded")] * 5)
    with pytest.raises(ModelError) as caught:
        await model.generate(request())
    assert caught.value.kind == "unavailable" and caught.value.recoverable
    assert "4 attempts" in caught.value.message and "HTTP 503" in caught.value.message
    assert len(fake.requests) == 4 and clock.sleeps == [0.75, 1.5, 3.0]


async def test_gemini_when_deadline_would_pass_stops_retrying(
    fake: FakeGemini, clock: Clock
) -> None:
    gemini = GeminiModel(
        base_url=fake.url,
        api_key="test-key",
        retry=RetryPolicy(max_retries=10, base_delay=8.0, max_delay=8.0, deadline=10.0),
        sleep=clock.sleep,
        clock=clock,
        rng=lambda: 1.0,
    )
    fake.script(*[error(500, "INTERNAL", "boom")] * 5)
    try:
        with pytest.raises(ModelError, match="2 attempts"):
            await gemini.generate(request())
    finally:
        await gemini.aclose()
    assert clock.sleeps == [8.0]


@pytest.mark.parametrize(
    ("reply", "kind", "text"),
    [
        (error(401, "UNAUTHENTICATED", "bad key"), "auth", "HTTP 401"),
        (error(403, "PERMISSION_DENIED", "no"), "auth", "HTTP 403"),
        (error(400, "INVALID_ARGUMENT", "schema"), "bad_request", "HTTP 400 INVALID_ARGUMENT"),
        (safety_blocked(), "blocked", "blocked by safety filters (SAFETY)"),
        (prompt_blocked("PROHIBITED_CONTENT"), "blocked", "PROHIBITED_CONTENT"),
        (answer("", finish="RECITATION"), "refused", "RECITATION"),
    ],
)
@pytest.mark.clause("002-§errors.5")
async def test_gemini_when_call_fails_for_good_raises_model_error_without_retry(
    fake: FakeGemini, model: GeminiModel, reply: Reply, kind: str, text: str
) -> None:
    fake.script(reply)
    with pytest.raises(ModelError) as caught:
        await model.generate(request())
    assert caught.value.kind == kind and text in caught.value.message
    assert not caught.value.recoverable and len(fake.requests) == 1


@pytest.mark.clause("002-§errors.6")
async def test_gemini_when_failing_keeps_prompt_and_key_out_of_errors_and_logs(
    fake: FakeGemini, model: GeminiModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.script(error(429, "RESOURCE_EXHAUSTED", f"echo {PROMPT}"), error(400, "X", PROMPT))
    with pytest.raises(ModelError) as caught:
        await model.generate(request())
    for text in (caught.value.message, caplog.text):
        assert "SecretBox" not in text and "test-key" not in text
    assert "retry 1 of 3" in caplog.text


async def test_gemini_when_no_key_configured_raises_auth_naming_the_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    gemini = GeminiModel(base_url="http://127.0.0.1:9")
    with pytest.raises(ModelError) as caught:
        await gemini.generate(request())
    assert caught.value.kind == "auth" and "GEMINI_API_KEY" in caught.value.message
    await gemini.aclose()


async def test_gemini_when_base_url_unset_sdk_reads_google_gemini_base_url(
    fake: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("GEMINI_API_KEY", "env-key")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    gemini = GeminiModel("gemini-2.5-pro")
    fake.script(answer("{}"))
    try:
        await gemini.generate(request())
    finally:
        await gemini.aclose()
    (sent,) = fake.requests
    assert sent.model == "gemini-2.5-pro" and sent.api_key == "env-key"


async def test_gemini_when_history_given_sends_turns_in_order_with_roles(
    fake: FakeGemini, model: GeminiModel
) -> None:
    fake.script(answer("{}"))
    turns = (Turn("user", "first"), Turn("model", "done"), Turn("user", "second"))
    await model.generate(ModelRequest(system="s", contents=turns, response_schema={}))
    contents = fake.requests[0].body["contents"]
    assert [(c["role"], c["parts"][0]["text"]) for c in contents] == [
        ("user", "first"),
        ("model", "done"),
        ("user", "second"),
    ]
