"""A durable consumer whose update a cluster refuses while it elects a leader is left as it
is, to be tried again (``until_ready``), never deleted and recreated as if it were wrong."""

from __future__ import annotations

from typing import Any

import pytest
from nats.js.api import ConsumerConfig, ConsumerInfo, SequenceInfo
from nats.js.errors import ServiceUnavailableError

from services.runtime.nats.durables import DurableConsumer

CONFIG = ConsumerConfig(durable_name="planner", filter_subject="bm.run.*.requested")


class Electing:
    """The JetStream API of a cluster electing a leader: the consumer is there, and any
    change is refused as the server refuses it then (503, err_code 10008)."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        return ConsumerInfo(
            stream_name=stream,
            name=name,
            config=CONFIG.evolve(max_deliver=3),  # changed: the start updates it
            ack_floor=SequenceInfo(consumer_seq=7, stream_seq=7),
            created=0,
        )

    async def add_consumer(self, stream: str, config: ConsumerConfig, **_: Any) -> ConsumerInfo:
        raise ServiceUnavailableError(code=503, err_code=10008, description="unavailable")

    async def delete_consumer(self, stream: str, name: str) -> bool:
        self.deleted.append(name)
        return True


async def test_durable_when_the_cluster_is_electing_raises_and_deletes_nothing() -> None:
    js = Electing()
    with pytest.raises(ServiceUnavailableError):
        await DurableConsumer(js, "BM_EVENTS", CONFIG).ensure()  # type: ignore[arg-type]
    assert js.deleted == []
