"""What a tail refuses before it touches the server, and how it matches a delivery's
subject to the filter it asked for (the rest runs on a real log:
tests/integration/test_log_tail.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy, RawStreamMsg

from services.runtime.nats.tail import MAX_FOLLOWS, LogTail, matches


class Untouched:
    """A JetStream that fails the test if the tail reaches it."""

    async def subscribe(
        self,
        subject: str,
        *,
        cb: Callable[[Msg], Awaitable[None]],
        stream: str,
        ordered_consumer: bool,
        deliver_policy: DeliverPolicy,
    ) -> Subscription:
        raise AssertionError("the tail subscribed")

    async def get_last_msg(self, stream_name: str, subject: str) -> RawStreamMsg:
        raise AssertionError("the tail read the log")


def tail(follows: list[str], timeout: float = 5.0) -> LogTail[bytes]:
    return LogTail("the test view", Untouched(), "S", follows, lambda s, d: d, print, timeout)


@pytest.mark.parametrize(
    ("subject", "pattern", "expected"),
    [
        ("p.run.r1.requested", "p.run.*.requested", True),
        ("p.run.r1.approval_requested", "p.run.*.requested", False),
        ("p.signed.x.requested", "p.run.*.requested", False),  # ends right, is not the log's
        ("p.run.r1.x.requested", "p.run.*.requested", False),
        ("p.run.requested", "p.run.*.requested", False),
        ("p.lock.s.taken", "p.lock.*.*", True),
        ("p.project.a.b.c", "p.project.>", True),
        ("p.project", "p.project.>", False),
        ("_INBOX.abc", "p.run.*.requested", False),
    ],
)
def test_matches_when_given_a_subject_agrees_with_nats(
    subject: str, pattern: str, expected: bool
) -> None:
    assert matches(subject, pattern) is expected


@pytest.mark.parametrize(
    "follows",
    [[], ["a.b", "a.b"], [f"a.{i}" for i in range(MAX_FOLLOWS + 1)]],
    ids=["none", "twice", "too-many"],
)
def test_tail_when_filters_are_empty_repeated_or_too_many_is_refused(follows: list[str]) -> None:
    with pytest.raises(ValueError, match=f"the test view: a tail follows 1 to {MAX_FOLLOWS}"):
        tail(follows)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_tail_when_timeout_is_not_positive_is_refused(timeout: float) -> None:
    with pytest.raises(ValueError, match="catch-up timeout must be positive"):
        tail(["a.b"], timeout)


async def test_caught_up_when_timeout_is_negative_is_refused_before_the_server() -> None:
    with pytest.raises(ValueError, match="the test view: a catch-up timeout cannot be negative"):
        await tail(["a.b"]).caught_up(timeout=-0.5)


def test_inbox_when_asked_for_a_filter_it_does_not_follow_names_the_ones_it_does() -> None:
    with pytest.raises(ValueError, match=r"does not follow 'a\.>'; it follows \('a\.b',\)"):
        tail(["a.b"]).inbox("a.>")


async def test_stop_when_never_started_touches_nothing() -> None:
    stopped = tail(["a.b"])
    await stopped.stop()
    assert stopped.follows == ("a.b",)
