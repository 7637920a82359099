"""Reading a run back from the log: an event this version cannot read is left out, loudly."""

from __future__ import annotations

import logging

import msgspec
import pytest

from contracts import subjects
from services.runtime.nats.history import read_run, run_kinds
from services.runtime.service.publishers import JetStreamPublisher
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh, role_bus
from tests.unit.test_handlers import requested


async def test_read_run_when_an_event_is_unreadable_keeps_the_rest_and_warns(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    async with bare_mesh(settings) as mesh, role_bus(mesh, "client") as bus:
        first = requested()
        await JetStreamPublisher(bus.js, settings.prefix).publish(first)
        subject = subjects.run_events(settings.prefix, first.run_id, "requested")
        await bus.js.publish(subject, b'{"type": "run.requested", "from": "the future"}')
        with caplog.at_level(logging.WARNING, logger="services.runtime.nats.history"):
            events = await read_run(bus.js, settings.prefix, first.run_id)
    assert events == [first]
    assert "cannot be read by this version and is left out" in caplog.text


async def test_run_kinds_when_events_stored_names_each_kind_once(settings: Settings) -> None:
    async with bare_mesh(settings) as mesh, role_bus(mesh, "client") as bus:
        first = requested()
        publisher = JetStreamPublisher(bus.js, settings.prefix)
        assert await run_kinds(bus.js, settings.prefix, first.run_id) == set()
        await publisher.publish(first)
        await publisher.publish(
            msgspec.structs.replace(first, run_id="other-run", event_id="other-event")
        )
        assert await run_kinds(bus.js, settings.prefix, first.run_id) == {"requested"}


@pytest.mark.parametrize("run_id", ["*", ">", "a.b", "a *", ""])
async def test_read_run_when_the_id_is_a_wildcard_or_not_a_token_reads_nothing(
    settings: Settings, run_id: str
) -> None:
    async with bare_mesh(settings) as mesh, role_bus(mesh, "client") as bus:
        await JetStreamPublisher(bus.js, settings.prefix).publish(requested())
        with pytest.raises(ValueError, match="run id"):
            await read_run(bus.js, settings.prefix, run_id)
