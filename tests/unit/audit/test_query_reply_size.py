"""An audit answer too large for one message becomes an error the asker hears."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from contracts.queries import Reply, RunsReply
from services.audit.queries import QueryResponders

pytestmark = pytest.mark.asyncio


class Msg:
    subject = "bm.query.runs"
    data = b"{}"

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    async def respond(self, data: bytes) -> None:
        self.sent.append(data)


async def answered(reply: Reply, max_payload: int = 1024 * 1024) -> dict[str, Any]:
    bus = SimpleNamespace(nc=SimpleNamespace(max_payload=max_payload))
    responders = QueryResponders(bus, store=None)  # type: ignore[arg-type]
    msg = Msg()

    async def answer(data: bytes) -> Reply:
        return reply

    await responders._respond(msg, answer)  # type: ignore[arg-type]
    [sent] = msg.sent
    decoded: dict[str, Any] = msgspec.json.decode(sent)
    return decoded


async def test_respond_when_the_answer_fits_sends_it() -> None:
    reply = await answered(RunsReply(ok=True, last_seq=3, runs=[]))
    assert reply["ok"] is True and reply["last_seq"] == 3


async def test_respond_when_the_answer_is_larger_than_a_message_says_so() -> None:
    huge = Reply(ok=False, error="x" * 2_000_000)
    reply = await answered(huge)
    assert reply["ok"] is False
    assert "more than one message holds" in reply["error"] and "smaller limit" in reply["error"]
