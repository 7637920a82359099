"""The in-memory bus keeps the consumer loop's promises: subjects matched as NATS matches
them, log order, redelivery with a bounded count, dead letters, one ack, and quiet."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from contracts import subjects
from contracts.events import AnyEvent, Event, RunRequested, ThreadMessage
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.errors import EventTooLarge, Reject, Retry
from tests.support import memory_bus
from tests.support.memory_bus import HORIZON, START, MemoryBus, NeverQuiet, matches


def said(text: str, thread: str = "t1", event_id: str | None = None) -> ThreadMessage:
    return ThreadMessage(
        event_id=event_id or f"m-{thread}-{text}",
        at=0.0,
        thread_id=thread,
        run_id="r1",
        role="user",
        text=text,
    )


def requested(run_id: str = "r1") -> RunRequested:
    return RunRequested(
        event_id=f"e-{run_id}",
        at=0.0,
        run_id=run_id,
        request_id="q1",
        thread_id="t1",
        user="ana",
        scene_id="s1",
        prompt="add a cube",
    )


class Heard:
    """A handler that records what it is given and answers from a script of outcomes:
    events to publish, or an exception to raise."""

    def __init__(self, *script: Sequence[Event] | BaseException) -> None:
        self.script = list(script)
        self.heard: list[tuple[AnyEvent, Delivery]] = []

    async def __call__(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        self.heard.append((event, delivery))
        outcome = self.script.pop(0) if self.script else []
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def texts(self) -> list[str]:
        return [e.text for e, _ in self.heard if isinstance(e, ThreadMessage)]


def spec(durable: str, handler: Heard, *filters: str, **kw: object) -> ConsumerSpec:
    return ConsumerSpec(durable, list(filters), handler, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "subject", "matched"),
    [
        ("bm.run.*.planned", "bm.run.r1.planned", True),
        ("bm.run.*.planned", "bm.run.r1.approved", False),
        ("bm.run.*.planned", "bm.run.r1.x.planned", False),
        ("bm.run.*", "bm.run.r1.planned", False),
        ("bm.run.>", "bm.run.r1.planned", True),
        ("bm.run.>", "bm.run", False),
        ("bm.>", "bm.deadletter.policy", True),
        ("bm.run.r1.planned", "bm.run.r1.planned", True),
        ("bm.run.r1.planned", "bm.run.r2.planned", False),
        ("bm.*.*.*", "bm.run.r1.planned", True),
        ("bm.run.*.planned", "other.run.r1.planned", False),
    ],
)
def test_matches_when_nats_wildcards_match_as_the_server_does(
    pattern: str, subject: str, matched: bool
) -> None:
    assert matches(pattern, subject) is matched


def test_matches_when_subjects_are_built_by_contracts_finds_their_events() -> None:
    planned = subjects.run_events("bm", "r1", "planned")
    assert matches(subjects.any_run("bm", "planned"), planned)
    assert matches(subjects.deadletter("bm", "*"), subjects.deadletter("bm", "executor"))
    assert any(matches(s, planned) for s in subjects.stream_subjects("bm"))
    assert not matches(subjects.any_run("bm", "planned"), subjects.thread_events("bm", "t1", "x"))


async def test_bus_when_events_are_published_delivers_each_to_every_matching_durable_in_order() -> (
    None
):
    bus = MemoryBus()
    one, two, runs = Heard(), Heard(), Heard()
    bus.add(spec("one", one, "bm.thread.t1.*"))
    bus.add(spec("runs", runs, "bm.run.*.requested"))
    for text in ("a", "b"):
        await bus.publish(said(text))
    await bus.publish(said("elsewhere", thread="t2"))
    await bus.publish(requested())
    bus.add(spec("two", two))  # bound late, with no filter: the whole log from its start
    await bus.publish(said("c"))
    assert await bus.run_until_quiet() == 3 + 1 + 5
    assert one.texts() == ["a", "b", "c"]
    assert [d.stream_seq for _, d in one.heard] == [1, 2, 5]
    assert [type(e) for e, _ in runs.heard] == [RunRequested]
    assert two.texts() == ["a", "b", "elsewhere", "c"] and len(two.heard) == 5
    assert all(s.outcome == "acked" for s in bus.settled)


async def test_bus_when_a_handler_returns_events_appends_them_and_delivers_them_on() -> None:
    bus = MemoryBus()
    first = Heard([said("reply", thread="t2")])
    second = Heard()
    bus.add(spec("first", first, "bm.thread.t1.*"))
    bus.add(spec("second", second, "bm.thread.t2.*"))
    await bus.publish(said("hello"))
    await bus.run_until_quiet()
    assert second.texts() == ["reply"]
    assert [s.subject for s in bus.log] == ["bm.thread.t1.message", "bm.thread.t2.message"]
    (delivery,) = [d for _, d in second.heard]
    assert delivery.headers == {"Nats-Msg-Id": "m-t2-reply"} and delivery.data == bus.log[1].data


async def test_bus_when_the_same_event_id_is_published_twice_keeps_and_delivers_one() -> None:
    bus = MemoryBus()
    heard = Heard()
    bus.add(spec("one", heard))
    assert await bus.publish(said("once")) == await bus.publish(said("once")) == 1
    await bus.run_until_quiet()
    assert len(bus.log) == 1 and heard.texts() == ["once"]


async def test_bus_when_handler_retries_delivers_again_after_the_delay_and_acks_once() -> None:
    bus = MemoryBus()
    heard = Heard(Retry("not yet", 0.5), Retry("still not", 2.0), [])
    bus.add(spec("one", heard))
    await bus.publish(said("x"))
    assert await bus.run_until_quiet() == 3
    assert [d.num_delivered for _, d in heard.heard] == [1, 2, 3]
    assert bus.now == START + 2.5
    assert [(s.outcome, s.reason) for s in bus.settled] == [
        ("retry", "not yet"),
        ("retry", "still not"),
        ("acked", ""),
    ]


async def test_bus_when_a_message_waits_for_redelivery_delivers_the_ones_behind_it() -> None:
    bus = MemoryBus()
    heard = Heard(Retry("later", 1.0), [], [])
    bus.add(spec("one", heard))
    await bus.publish(said("first"))
    await bus.publish(said("second"))
    await bus.run_until_quiet()
    assert heard.texts() == ["first", "second", "first"]
    assert [s.outcome for s in bus.settled] == ["retry", "acked", "acked"]


async def test_bus_when_handler_fails_unexpectedly_backs_off_as_the_consumer_loop() -> None:
    bus = MemoryBus()
    heard = Heard(OSError("disk"), OSError("disk"), [])
    bus.add(spec("one", heard))
    await bus.publish(said("x"))
    await bus.run_until_quiet()
    assert bus.now == START + 0.25 + 0.5  # backoff(1), backoff(2)
    assert bus.settled[0].reason == "OSError: disk"


async def test_bus_when_retries_exhaust_max_deliver_dead_letters_to_its_readers() -> None:
    bus = MemoryBus()
    stuck = Heard(*[Retry("never", 0.1)] * 10)
    letters = Heard()
    bus.add(spec("stuck", stuck, "bm.thread.>", max_deliver=3))
    bus.add(spec("letters", letters, subjects.deadletter("bm", "*")))
    await bus.publish(said("x"))
    await bus.run_until_quiet()
    assert len(stuck.heard) == 3
    (letter,) = bus.dead_letters()
    assert (letter.consumer, letter.stream_seq, letter.deliveries) == ("stuck", 1, 3)
    assert letter.reason == "gave up after 3 deliveries: never"
    assert letter.subject == "bm.thread.t1.message" and '"text":"x"' in letter.payload
    assert [e for e, _ in letters.heard] == [letter]
    assert [s.outcome for s in bus.settled if s.durable == "stuck"] == ["retry", "retry", "dead"]


async def test_bus_when_handler_rejects_dead_letters_at_once() -> None:
    bus = MemoryBus()
    heard = Heard(Reject("malformed"))
    bus.add(spec("one", heard, "bm.thread.>"))
    await bus.publish(said("x"))
    await bus.run_until_quiet()
    (letter,) = bus.dead_letters()
    assert letter.reason == "rejected: malformed" and letter.deliveries == 1
    assert len(heard.heard) == 1


async def test_bus_when_handler_output_is_too_large_dead_letters_it_as_rejected() -> None:
    bus = MemoryBus()
    heard = Heard([said("x" * 2_000_000, thread="t2")])
    bus.add(spec("one", heard, "bm.thread.t1.*"))
    await bus.publish(said("small"))
    await bus.run_until_quiet()
    (letter,) = bus.dead_letters()
    assert letter.reason.startswith("rejected: event thread.message is")
    assert not any(s.subject == "bm.thread.t2.message" for s in bus.log)
    with pytest.raises(EventTooLarge):
        await bus.publish(said("y" * 2_000_000))


async def test_bus_when_a_message_cannot_be_decoded_dead_letters_it_untouched() -> None:
    bus = MemoryBus()
    heard = Heard()
    bus.add(spec("one", heard, "bm.run.*.requested"))
    bus.publish_raw("bm.run.r9.requested", b'{"type": "run.requested", "oops": 1}')
    await bus.run_until_quiet()
    assert heard.heard == []
    (letter,) = bus.dead_letters()
    assert letter.reason.startswith("undecodable message:") and letter.stream_seq == 1
    assert bus.events("run.>") == []  # read back as read_subject does: left out


async def test_bus_when_a_retry_waits_past_the_horizon_is_quiet_until_advanced() -> None:
    bus = MemoryBus()
    heard = Heard(Retry("an expiry timer", HORIZON * 4), [])
    bus.add(spec("timer", heard))
    await bus.publish(said("x"))
    assert await bus.run_until_quiet() == 1
    assert bus.timers() == [(HORIZON * 4, "timer", "bm.thread.t1.message")]
    assert await bus.advance(HORIZON) == 0 and len(heard.heard) == 1
    assert await bus.advance(HORIZON * 3) == 1
    assert bus.now == START + HORIZON * 4 and bus.timers() == []
    assert [s.outcome for s in bus.settled] == ["retry", "acked"]


async def test_bus_when_two_handlers_answer_each_other_forever_names_the_cycle() -> None:
    bus = MemoryBus(max_steps=50)

    async def echo(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        assert isinstance(event, ThreadMessage)
        other = "pong" if event.thread_id == "ping" else "ping"
        return [said(event.text + ".", thread=other, event_id=f"{event.event_id}+")]

    bus.add(ConsumerSpec("left", ["bm.thread.ping.*"], echo))
    bus.add(ConsumerSpec("right", ["bm.thread.pong.*"], echo))
    await bus.publish(said("", thread="ping"))
    with pytest.raises(NeverQuiet, match="within 50 deliveries") as raised:
        await bus.run_until_quiet()
    cycle = str(raised.value).split("cycles through: ")[1]
    assert cycle in (
        "left <- thread.message -> right <- thread.message",
        "right <- thread.message -> left <- thread.message",
    )


async def test_bus_when_a_handler_retries_at_once_forever_names_it() -> None:
    bus = MemoryBus(max_steps=20)
    bus.add(spec("spin", Heard(*[Retry("again", 0.0)] * 100), max_deliver=1000))
    await bus.publish(requested())
    with pytest.raises(NeverQuiet, match=r"cycles through: spin <- run\.requested$"):
        await bus.run_until_quiet()


async def test_bus_when_batch_consumer_is_behind_hands_it_what_waits_in_log_order() -> None:
    bus = MemoryBus()
    batches: list[list[int]] = []

    async def apply(items: Sequence[tuple[AnyEvent, Delivery]]) -> Sequence[Event]:
        batches.append([d.stream_seq for _, d in items])
        return []

    for text in "abcde":
        await bus.publish(said(text))
    bus.add(ConsumerSpec("views", [], Heard(), batch=3, batch_handler=apply))
    await bus.run_until_quiet()
    assert batches == [[1, 2, 3], [4, 5]]
    assert sorted(s.seq for s in bus.settled) == [1, 2, 3, 4, 5]


async def test_bus_when_one_of_a_batch_always_fails_dead_letters_it_alone() -> None:
    bus = MemoryBus()
    applied: list[str] = []

    async def apply(items: Sequence[tuple[AnyEvent, Delivery]]) -> Sequence[Event]:
        texts = [e.text for e, _ in items if isinstance(e, ThreadMessage)]
        if "bad" in texts:
            raise ValueError("cannot apply 'bad'")
        applied.extend(texts)
        return []

    for text in ("a", "bad", "c"):
        await bus.publish(said(text))
    bus.add(ConsumerSpec("views", [], Heard(), batch=8, batch_handler=apply, max_deliver=2))
    await bus.run_until_quiet()
    assert applied == ["a", "c"]
    (letter,) = bus.dead_letters()
    assert letter.stream_seq == 2 and letter.consumer == "views"
    assert letter.reason == "gave up after 2 attempts: ValueError: cannot apply 'bad'"


async def test_bus_when_runs_are_read_back_gives_their_events_and_kinds() -> None:
    bus = MemoryBus()
    await bus.publish(requested("r1"))
    await bus.publish(requested("r2"))
    await bus.publish(said("x"))
    assert [e.run_id for e in await bus.history("r1")] == ["r1"]  # type: ignore[union-attr]
    assert await bus.kinds("r2") == {"requested"}
    with pytest.raises(ValueError, match="run id"):
        await bus.history("*")


async def test_bus_when_the_log_is_full_refuses_to_append(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_bus, "MAX_LOG", 2)
    bus = MemoryBus()
    await bus.publish(said("a"))
    await bus.publish(said("b"))
    with pytest.raises(OverflowError, match="full"):
        await bus.publish(said("c"))
    assert len(bus.log) == 2


async def test_bus_when_a_durable_is_bound_twice_refuses() -> None:
    bus = MemoryBus()
    bus.add(spec("one", Heard()))
    with pytest.raises(ValueError, match="bound already"):
        bus.add(spec("one", Heard()))
