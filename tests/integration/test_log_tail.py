"""A tail of the real log: the view holds what the log has once ``caught_up`` returns, and
each way it cannot (a follower refused, a message that does not decode, a view that fails,
a wait cut short by ``stop``) ends in an error that says so."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import msgspec
import pytest
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RawStreamMsg

from contracts import subjects
from services.runtime.nats.tail import LogTail, TailBehind, TailError, TailFailed, TailStopped
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration

STREAM = subjects.stream_name("bmtest")
NOTES = "bmtest.run.*.noted"
MARKS = "bmtest.run.*.marked"


class Note(msgspec.Struct):
    text: str


class Notes:
    """A view that keeps every note it is handed, in order."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.texts: list[str] = []
        self._fail_on = fail_on

    def apply(self, note: Note) -> None:
        if note.text == self._fail_on:
            raise RuntimeError(f"cannot hold {note.text}")
        self.texts.append(note.text)


def read(subject: str, data: bytes) -> Note:
    return msgspec.json.decode(data, type=Note)


def tail_of(bus: Bus, view: Notes, stream: str = STREAM, timeout: float = 5.0) -> LogTail[Note]:
    return LogTail("the notes", bus.js, stream, [NOTES, MARKS], read, view.apply, timeout)


async def note(bus: Bus, text: str, kind: str = "noted") -> int:
    ack = await bus.js.publish(f"bmtest.run.r1.{kind}", msgspec.json.encode(Note(text)))
    return ack.seq


class Held:
    """The real JetStream, with every delivery held back until ``release``: a follower
    as slow as a stuck consumer, on demand."""

    def __init__(self, bus: Bus) -> None:
        self._js = bus.js
        self.released = asyncio.Event()

    async def subscribe(
        self,
        subject: str,
        *,
        cb: Callable[[Msg], Awaitable[None]],
        stream: str,
        ordered_consumer: bool,
        deliver_policy: DeliverPolicy,
    ) -> Subscription:
        async def held(msg: Msg) -> None:
            await self.released.wait()
            await cb(msg)

        return await self._js.subscribe(
            subject,
            cb=held,
            stream=stream,
            ordered_consumer=ordered_consumer,
            deliver_policy=deliver_policy,
        )

    async def get_last_msg(self, stream_name: str, subject: str) -> RawStreamMsg:
        return await self._js.get_last_msg(stream_name, subject)


class Refusing(Held):
    """The real JetStream, asked for ``refused`` in a stream the server does not have."""

    def __init__(self, bus: Bus, refused: str) -> None:
        super().__init__(bus)
        self.released.set()
        self._refused = refused

    async def subscribe(
        self,
        subject: str,
        *,
        cb: Callable[[Msg], Awaitable[None]],
        stream: str,
        ordered_consumer: bool,
        deliver_policy: DeliverPolicy,
    ) -> Subscription:
        if subject == self._refused:
            stream = "BMTEST_MISSING"
        return await super().subscribe(
            subject,
            cb=cb,
            stream=stream,
            ordered_consumer=ordered_consumer,
            deliver_policy=deliver_policy,
        )


async def test_tail_when_caught_up_holds_every_message_in_log_order(bus: Bus) -> None:
    view = Notes()
    tail = tail_of(bus, view)
    try:
        await tail.caught_up()  # an empty log is caught up with at once
        assert view.texts == []
        for i in range(30):
            await note(bus, f"n{i}", "noted" if i % 2 else "marked")
        await tail.caught_up()
        assert sorted(view.texts) == sorted(f"n{i}" for i in range(30))
        assert [t for t in view.texts if int(t[1:]) % 2] == [f"n{i}" for i in range(1, 30, 2)]
        await note(bus, "late")
        await tail.caught_up()
        assert view.texts[-1] == "late"
    finally:
        await tail.stop()


async def test_tail_when_a_message_does_not_decode_skips_it_and_says_so(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    view = Notes()
    tail = tail_of(bus, view)
    try:
        await note(bus, "before")
        bad = (await bus.js.publish("bmtest.run.r1.noted", b"\xff not json")).seq
        await note(bus, "after")
        with caplog.at_level(logging.WARNING, "blendmesh.security"):
            await tail.caught_up()
        assert view.texts == ["before", "after"]
        assert f"the notes skipped message {bad} on bmtest.run.r1.noted" in caplog.text
    finally:
        await tail.stop()


async def test_tail_when_a_delivery_is_not_its_filters_ignores_it(
    bus: Bus, caplog: pytest.LogCaptureFixture
) -> None:
    view = Notes()
    tail = tail_of(bus, view)
    try:
        await note(bus, "real")
        await tail.caught_up()
        # Anyone may publish into a follower's inbox: what arrives there on the inbox's
        # own subject is no message of the log, however well it decodes.
        with caplog.at_level(logging.WARNING, "blendmesh.security"):
            await bus.nc.publish(tail.inbox(NOTES), msgspec.json.encode(Note("forged")))
            await bus.nc.flush()
            await note(bus, "next")
            await tail.caught_up()
        assert view.texts == ["real", "next"]
        assert "the notes ignored a delivery on _INBOX." in caplog.text
    finally:
        await tail.stop()


async def test_tail_when_the_log_is_delivered_again_applies_each_message_once(
    bus: Bus,
) -> None:
    view = Notes()
    tail = tail_of(bus, view)
    try:
        await note(bus, "once")
        await note(bus, "twice")
        await tail.caught_up()
        # A second consumer aimed at the follower's inbox replays the filter from the
        # start: real deliveries of the log, each one already applied.
        config = ConsumerConfig(
            name="replay",
            deliver_subject=tail.inbox(NOTES),
            filter_subject=NOTES,
            ack_policy=AckPolicy.NONE,
        )
        await bus.js.add_consumer(STREAM, config)
        await asyncio.sleep(0.5)
        await note(bus, "thrice")
        await tail.caught_up()
        assert view.texts == ["once", "twice", "thrice"]
    finally:
        await tail.stop()


async def test_tail_when_the_view_fails_stops_and_names_the_message(bus: Bus) -> None:
    view = Notes(fail_on="poison")
    tail = tail_of(bus, view, timeout=30)
    try:
        await note(bus, "fine")
        seq = await note(bus, "poison")
        await note(bus, "never")
        started = asyncio.get_running_loop().time()
        with pytest.raises(TailFailed, match=rf"applying message {seq} on bmtest.run.r1.noted"):
            await tail.caught_up()
        # The failure ends the wait when it happens, not at the timeout.
        assert asyncio.get_running_loop().time() - started < 10
        with pytest.raises(TailFailed, match="restart the service"):
            await tail.caught_up()
        assert view.texts == ["fine"]  # nothing past the message it could not apply
    finally:
        await tail.stop()


async def test_tail_when_the_subscription_fails_names_it_and_can_start_later(bus: Bus) -> None:
    view = Notes()
    follows = ["bmtest.notes.*"]
    tail = LogTail("the notes", bus.js, "BMTEST_NOTES", follows, read, view.apply)
    try:
        refused = r"could not follow bmtest\.notes\.\* in BMTEST_NOTES .*then try again"
        with pytest.raises(TailFailed, match=refused):
            await tail.caught_up()
        with pytest.raises(TailError, match="not following yet"):
            tail.inbox(follows[0])  # the refused start left no follower behind
        await bus.js.add_stream(name="BMTEST_NOTES", subjects=["bmtest.notes.>"])
        await bus.js.publish("bmtest.notes.a", msgspec.json.encode(Note("kept")))
        await tail.caught_up()  # a later call starts afresh
        assert view.texts == ["kept"]
    finally:
        await tail.stop()


async def test_tail_when_a_later_follower_is_refused_leaves_the_earlier_none(bus: Bus) -> None:
    view = Notes()
    tail = LogTail("the notes", Refusing(bus, MARKS), STREAM, [NOTES, MARKS], read, view.apply)
    try:
        with pytest.raises(TailFailed, match=r"could not follow bmtest\.run\.\*\.marked"):
            await tail.start()
        await note(bus, "unheard")
        await asyncio.sleep(0.5)
        assert view.texts == []  # the follower of NOTES made first was unsubscribed
    finally:
        await tail.stop()


async def test_tail_when_deliveries_lag_says_it_is_behind_until_they_arrive(bus: Bus) -> None:
    view = Notes()
    held = Held(bus)
    tail = LogTail("the notes", held, STREAM, [NOTES, MARKS], read, view.apply)
    try:
        await note(bus, "slow")
        with pytest.raises(
            TailBehind, match=r"the notes is behind the log \(bmtest\.run\.\*\.noted\)"
        ):
            await tail.caught_up(timeout=0.2)
        held.released.set()
        await tail.caught_up()
        assert view.texts == ["slow"]
    finally:
        held.released.set()
        await tail.stop()


async def test_tail_when_stopped_while_waiting_ends_the_wait_at_once(bus: Bus) -> None:
    view = Notes()
    held = Held(bus)
    tail = LogTail("the notes", held, STREAM, [NOTES, MARKS], read, view.apply)
    await note(bus, "slow")
    waiting = asyncio.create_task(tail.caught_up(timeout=60))
    await asyncio.sleep(0.3)
    assert not waiting.done()
    await tail.stop()
    with pytest.raises(TailStopped, match="the notes was stopped"):
        await asyncio.wait_for(waiting, 5)
    held.released.set()  # what was held arrives after the stop and changes nothing
    await asyncio.sleep(0.2)
    assert view.texts == []
    with pytest.raises(TailStopped):
        await tail.start()
    with pytest.raises(TailStopped):
        tail.inbox(NOTES)
