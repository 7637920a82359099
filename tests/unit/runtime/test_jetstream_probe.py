"""``wait_for_jetstream``: the first JetStream request of every start, which a server
without a meta leader yet leaves unanswered."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest
from nats.js import JetStreamContext
from nats.js.errors import ServiceUnavailableError

from services.runtime.nats import ready
from services.runtime.nats.bus import PROBE_WITHIN, JetStreamUnavailable, wait_for_jetstream


class Electing:
    """A JetStream whose first ``unanswered`` account requests get no answer, as on a
    cluster still electing its meta leader; later ones are answered at once."""

    def __init__(self, unanswered: int) -> None:
        self.unanswered = unanswered
        self.asked: list[float] = []

    async def account_info(self) -> dict[str, Any]:
        self.asked.append(time.monotonic())
        if len(self.asked) <= self.unanswered:
            await asyncio.sleep(30)
        return {}


async def test_wait_for_jetstream_when_a_request_is_dropped_asks_again_within_a_second() -> None:
    js = Electing(unanswered=1)
    began = time.monotonic()
    await asyncio.wait_for(wait_for_jetstream(cast(JetStreamContext, js), wait=10), 5)
    # The probe's first attempt is cut at PROBE_WITHIN, not at the 2 s a stream's is.
    assert len(js.asked) == 2
    assert PROBE_WITHIN <= js.asked[1] - began < ready.ATTEMPT_WITHIN
    assert time.monotonic() - began < 1.0


async def test_wait_for_jetstream_when_never_answered_gives_up_at_its_deadline() -> None:
    js = Electing(unanswered=100)
    with pytest.raises(JetStreamUnavailable, match=r"JetStream was not ready within 0\.6 s"):
        await wait_for_jetstream(cast(JetStreamContext, js), wait=0.6)
    # Cut at 0.5 s, it was asked again before the deadline.
    assert len(js.asked) == 2


async def test_wait_for_jetstream_when_the_server_has_no_jetstream_says_so() -> None:
    class NoJetStream:
        async def account_info(self) -> dict[str, Any]:
            raise ServiceUnavailableError()

    with pytest.raises(JetStreamUnavailable, match="has no JetStream"):
        await wait_for_jetstream(cast(JetStreamContext, NoJetStream()), wait=10)
