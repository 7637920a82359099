"""``until_ready``: the one bounded retry a start uses while JetStream is not ready."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ClusterInfo, StreamConfig, StreamInfo, StreamState
from nats.js.errors import (
    APIError,
    BadRequestError,
    NoStreamResponseError,
    NotFoundError,
    ServiceUnavailableError,
)

from services.runtime.nats import ready
from services.runtime.nats.ready import NoLeaderYet, NotReady, elected, not_yet, until_ready


class Flaky:
    """A step that fails with ``errors`` in turn, then answers ``done``."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


async def test_until_ready_when_jetstream_answers_late_retries_and_logs_what_it_waits_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "blendmesh.ready")
    step = Flaky(NoStreamResponseError(), ServiceUnavailableError(err_code=10008))
    assert await until_ready("KV bucket bm_catalog", step, wait=10) == "done"
    assert step.calls == 3
    said = [r for r in caplog.records if r.name == "blendmesh.ready"]
    assert [r.levelno for r in said] == [logging.WARNING, logging.INFO]
    assert all("waiting for KV bucket bm_catalog" in r.getMessage() for r in said)


async def test_until_ready_when_never_ready_gives_up_at_the_deadline_naming_the_step() -> None:
    step = Flaky(*[NoStreamResponseError()] * 100)
    began = time.monotonic()
    with pytest.raises(NotReady) as raised:
        await until_ready("stream BM_EVENTS", step, wait=0.6, hint="start the servers")
    took = time.monotonic() - began
    assert 0.6 <= took < 2.0
    said = str(raised.value)
    assert said.startswith("stream BM_EVENTS was not ready within 0.6 s")
    assert said.endswith("; start the servers")
    assert isinstance(raised.value, ConnectionError)  # the CLI's "mesh cannot start"


async def test_until_ready_when_the_step_is_wrong_raises_at_once() -> None:
    step = Flaky(BadRequestError(code=400, err_code=10058, description="in use"))
    with pytest.raises(BadRequestError):
        await until_ready("stream BM_EVENTS", step, wait=10)
    assert step.calls == 1


async def test_until_ready_when_an_attempt_hangs_cuts_it_short_and_tries_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ready, "ATTEMPT_WITHIN", 0.1)
    attempts = 0

    async def hangs_once() -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            await asyncio.sleep(30)  # a request no leader answers
        return "done"

    assert await asyncio.wait_for(until_ready("JetStream", hangs_once, wait=10), 5) == "done"
    assert attempts == 2


async def test_until_ready_when_given_a_first_attempt_cuts_attempts_at_its_multiples() -> None:
    given: list[float] = []

    async def hangs() -> str:
        began = time.monotonic()
        try:
            await asyncio.sleep(30)
        finally:
            given.append(time.monotonic() - began)
        return "never"

    with pytest.raises(NotReady, match=r"no answer within 0\.2 s"):
        await until_ready("JetStream", hangs, wait=0.3, first_attempt=0.1)
    assert given == pytest.approx([0.1, 0.2], abs=0.05)


@pytest.mark.parametrize(
    "error",
    [
        NoStreamResponseError(),
        ServiceUnavailableError(),
        NoRespondersError(),
        NatsTimeoutError(),
        TimeoutError(),
        NoLeaderYet("stream X has no leader yet"),
        APIError(code=500, err_code=10009, description="cluster can not handle request"),
        APIError(code=400, err_code=10005, description="no suitable peers for placement"),
    ],
)
def test_not_yet_when_jetstream_is_electing_or_placing_is_true(error: BaseException) -> None:
    assert not_yet(error)


@pytest.mark.parametrize(
    "error",
    [
        NotFoundError(code=404, err_code=10059, description="stream not found"),
        BadRequestError(code=400, err_code=10058, description="name in use"),
        APIError(code=500, err_code=10074, description="replicas > 1 not supported"),
        ValueError("a bug"),
    ],
)
def test_not_yet_when_the_request_itself_is_wrong_is_false(error: BaseException) -> None:
    assert not not_yet(error)


def _info(cluster: ClusterInfo | None) -> StreamInfo:
    return StreamInfo(
        config=StreamConfig(name="BM_EVENTS"),
        state=StreamState(messages=0, bytes=0, first_seq=0, last_seq=0, consumer_count=0),
        cluster=cluster,
    )


def test_elected_when_a_cluster_stream_has_no_leader_yet_says_so() -> None:
    with pytest.raises(NoLeaderYet, match="stream BM_EVENTS has no leader yet"):
        elected(_info(ClusterInfo(name="blendmesh", leader=None)))


def test_elected_when_led_or_on_one_server_returns_the_info() -> None:
    led = _info(ClusterInfo(name="blendmesh", leader="n2"))
    assert elected(led) is led
    alone = _info(None)
    assert elected(alone) is alone
