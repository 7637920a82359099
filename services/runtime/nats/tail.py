"""Following the log's tail into a view held in memory, and knowing when it has caught up.

A view folded from the log (the doors' ownership index, the projects book) is kept current
by one ordered consumer per subject filter, from the log's first message on. Before a
view is read, ``caught_up`` asks the log for its newest message on each filter (one direct
get each) and waits until the view holds at least that much, so a lookup sees everything
a scan of the log would have seen.

A delivery is believed only when it arrives on a subject its filter matches, from the
log's own stream (docs/adr/0015); a message that does not decode is skipped with a
warning. A view that raises while applying a message stops the tail for good instead of
skipping it: a skipped ``member_removed`` would leave a member in, so the view answers
nothing rather than something wrong (docs/adr/0077).

Errors::

    BlendmeshError
    └── TailError      (RuntimeError)
        ├── TailBehind     the view did not reach the log's newest message in time
        ├── TailFailed     a follower could not start or read the log, or the view failed
        └── TailStopped    the tail was stopped
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Protocol, TypeVar

import msgspec
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy, RawStreamMsg
from nats.js.errors import NotFoundError

from contracts.errors import BlendmeshError
from services.runtime.nats.retry import poll

log = logging.getLogger("blendmesh.security")

E = TypeVar("E")

# Filters one tail follows at most: each is a consumer on the server and a direct get per
# lookup; the views blendmesh keeps follow two.
MAX_FOLLOWS = 16


class TailError(BlendmeshError, RuntimeError):
    """The view cannot be read as the log has it now; the message says why and what to do."""


class TailBehind(TailError):
    """The view did not reach the log's newest message in time; asking again may succeed."""


class TailFailed(TailError):
    """A follower could not start or read the log, or the view failed applying a message."""


class TailStopped(TailError):
    """The tail was stopped: it follows nothing any more, and a new one must be built."""


class Follows(Protocol):
    """The JetStream calls a tail makes (``JetStreamContext`` has them)."""

    async def subscribe(
        self,
        subject: str,
        *,
        cb: Callable[[Msg], Awaitable[None]],
        stream: str,
        ordered_consumer: bool,
        deliver_policy: DeliverPolicy,
    ) -> Subscription: ...

    async def get_last_msg(self, stream_name: str, subject: str) -> RawStreamMsg: ...


def matches(subject: str, pattern: str) -> bool:
    """Whether NATS would deliver ``subject`` to a subscription on ``pattern``."""
    tokens, wanted = subject.split("."), pattern.split(".")
    for i, token in enumerate(wanted):
        if token == ">":
            return len(tokens) > i
        if i >= len(tokens) or (token != "*" and token != tokens[i]):
            return False
    return len(tokens) == len(wanted)


class LogTail(Generic[E]):
    """Ordered consumers on ``follows`` in ``stream``: each message is ``read`` into an
    ``E`` (None skips it) and handed to ``apply``. Started by ``start`` or the first
    ``caught_up``; ``stop`` ends it for good."""

    def __init__(
        self,
        name: str,
        js: Follows,
        stream: str,
        follows: Sequence[str],
        read: Callable[[str, bytes], E | None],
        apply: Callable[[E], None],
        timeout: float = 5.0,
    ) -> None:
        if not follows or len(follows) > MAX_FOLLOWS or len(set(follows)) != len(follows):
            raise ValueError(
                f"{name}: a tail follows 1 to {MAX_FOLLOWS} distinct filters, got {list(follows)}"
            )
        if timeout <= 0:
            raise ValueError(f"{name}: the catch-up timeout must be positive, got {timeout}")
        self.name = name
        self._js = js
        self._stream = stream
        self._follows = tuple(follows)
        self._read = read
        self._apply = apply
        self._timeout = timeout
        self._seen: dict[str, int] = dict.fromkeys(self._follows, 0)  # newest seq applied
        self._subs: dict[str, Subscription] = {}
        self._starting = asyncio.Lock()
        self._stopped = False
        self._broken: str | None = None  # why the view stopped, once it did

    @property
    def follows(self) -> tuple[str, ...]:
        return self._follows

    def inbox(self, follows: str) -> str:
        """The subject the follower of ``follows`` is delivered on. Anyone may aim a push
        consumer there (docs/adr/0015), which is why each delivery is checked."""
        if follows not in self._seen:
            raise ValueError(f"{self.name} does not follow {follows!r}; it follows {self.follows}")
        self._check()
        sub = self._subs.get(follows)
        if sub is None:
            raise TailError(f"{self.name} is not following yet; await start() first")
        return sub.subject

    async def start(self) -> None:
        """Subscribe every follower, once. A follower the server refuses raises
        ``TailFailed`` naming it, and leaves none behind, so a later call starts afresh."""
        async with self._starting:
            self._check()
            if self._subs:
                return
            try:
                for subject in self._follows:
                    self._subs[subject] = await self._js.subscribe(
                        subject,
                        cb=self._follower(subject),
                        stream=self._stream,
                        ordered_consumer=True,
                        deliver_policy=DeliverPolicy.ALL,
                    )
            except Exception as exc:
                await self._unsubscribe()
                raise TailFailed(
                    f"{self.name} could not follow {subject} in {self._stream} ({exc!r}); "
                    "check that the log exists and this login may read it, then try again"
                ) from exc

    async def caught_up(self, timeout: float | None = None) -> None:
        """Return once the view holds every message the log has now on its filters;
        ``TailBehind`` after ``timeout`` seconds (the tail's own by default)."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"{self.name}: a catch-up timeout cannot be negative, got {timeout}")
        await self.start()
        newest = await self._newest()

        async def behind() -> list[str]:
            return [s for s, seq in newest.items() if self._seen[s] < seq]

        def settled(lagging: list[str]) -> bool:
            return not lagging or self._stopped or self._broken is not None

        wait = self._timeout if timeout is None else timeout
        lagging = await poll(behind, settled, wait, pause=0.01)
        self._check()
        if lagging:
            raise TailBehind(
                f"{self.name} is behind the log ({', '.join(lagging)}) after {wait:g} s; try again"
            )

    async def stop(self) -> None:
        """Stop following for good; a wait in ``caught_up`` ends with ``TailStopped``."""
        self._stopped = True
        async with self._starting:
            await self._unsubscribe()

    def _check(self) -> None:
        if self._stopped:
            raise TailStopped(f"{self.name} was stopped; build a new one to follow the log")
        if self._broken is not None:
            # A new error each time: raising one instance again grows its traceback.
            raise TailFailed(self._broken)

    async def _newest(self) -> dict[str, int]:
        """The newest sequence on each filter, asked together: the policy and the executor
        wait for the projects book on every run's path, and one read after another waited
        once per filter."""

        async def last_seq(subject: str) -> int:
            try:
                return (await self._js.get_last_msg(self._stream, subject)).seq or 0
            except NotFoundError:
                return 0  # nothing on this filter yet: caught up with it at once
            except Exception as exc:
                raise TailFailed(
                    f"{self.name} could not read the log's newest message on {subject} "
                    f"({exc!r}); try again"
                ) from exc

        found = await asyncio.gather(*(last_seq(s) for s in self._follows))
        return {s: seq for s, seq in zip(self._follows, found, strict=True) if seq}

    async def _unsubscribe(self) -> None:
        for sub in self._subs.values():
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs = {}

    def _follower(self, follows: str) -> Callable[[Msg], Awaitable[None]]:
        async def follow(msg: Msg) -> None:
            if self._stopped or self._broken is not None:
                return
            # A push consumer aimed at this inbox by someone else delivers whatever it
            # was made to (ADR 0015): such a delivery must not move the view, nor how far
            # the view counts as caught up.
            if not matches(msg.subject, follows):
                log.warning("%s ignored a delivery on %s", self.name, msg.subject[:200])
                return
            try:
                metadata = msg.metadata
            except ValueError:  # not a JetStream delivery at all
                return
            seq = metadata.sequence.stream
            if metadata.stream != self._stream or seq <= self._seen[follows]:
                return
            self._take(follows, msg.subject, msg.data, seq)

        return follow

    def _take(self, follows: str, subject: str, data: bytes, seq: int) -> None:
        try:
            try:
                event = self._read(subject, data)
            except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                log.warning(
                    "%s skipped message %d on %s: it does not decode", self.name, seq, subject
                )
                event = None
            if event is not None:
                self._apply(event)
        except Exception as exc:
            log.exception("%s failed applying message %d on %s", self.name, seq, subject)
            self._broken = (
                f"{self.name} stopped following the log: applying message {seq} on "
                f"{subject[:200]} failed ({exc!r}); restart the service (see its log)"
            )
            return
        self._seen[follows] = seq
