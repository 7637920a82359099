"""One error tree for handlers; retryability is data, read only by the consumer loop.

    HandlerError
    ├── Retry       transient: try again later (nak with a delay)
    └── Reject      permanent: this message can never succeed (term + dead letter)
        └── EventTooLarge   what it produced cannot be published (also a LimitExceeded)

Any other exception is treated as transient until ``max_deliver`` is exhausted, after
which the message becomes a dead letter too: nothing is dropped silently.
"""

from __future__ import annotations

from contracts.errors import BlendmeshError
from contracts.limits import LimitExceeded


class HandlerError(BlendmeshError):
    """Base of the errors a handler raises on purpose."""


class Retry(HandlerError):
    """Transient: the message should be delivered again after ``delay`` seconds."""

    def __init__(self, reason: str, delay: float = 1.0) -> None:
        super().__init__(reason)
        self.delay = delay


class Reject(HandlerError):
    """Permanent: the message is malformed or impossible; dead-letter it with the reason."""


class EventTooLarge(Reject, LimitExceeded):
    """An event over the size one NATS message may have; it was not published.

    Permanent: publishing it again cannot succeed, so a handler that produced it is
    dead-lettered at once with this message instead of being retried.
    """
