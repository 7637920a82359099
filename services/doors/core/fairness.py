"""Each user's share of a door: requests a second, bytes a second, requests at once.

One user's flood must not become everyone's wait (1,500 staged files of 400 KB in 6.7 s
once held every other user's ``runs.list`` for 25 s). A door asks ``admit`` before it does
any work for a request, keyed by the login that sent it, and refuses at once what is over
the user's share, naming the limit, its setting and when to try again; ``done`` gives the
request's slot back. Buckets refill continuously (a token bucket), so a steady user is
never refused and a burst up to ``burst`` requests passes at once.

Pure: a clock is passed in, nothing here waits or touches a socket. The limits are read
once from the environment (``Limits.from_env``), and the table of users is bounded: the
least recently seen idle user is forgotten first.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from contracts.errors import BlendmeshError

MAX_USERS = 10_000  # users remembered at once; an idle one forgotten costs nothing
FLOOD_FACTOR = 20  # unanswered requests, in shares, after which a login is flooding
# Unanswered bytes, in shares: fewer, as bytes are what a door cannot refuse to read (a
# door's connection is cut once the server holds 64 MiB it has not read).
BYTES_FLOOD_FACTOR = 4

SETTINGS = {
    "requests_per_second": "BLENDMESH_USER_REQUESTS_PER_SECOND",
    "burst": "BLENDMESH_USER_REQUEST_BURST",
    "bytes_per_second": "BLENDMESH_USER_BYTES_PER_SECOND",
    "bytes_burst": "BLENDMESH_USER_BYTES_BURST",
    "in_flight": "BLENDMESH_USER_REQUESTS_AT_ONCE",
}


class FairnessSettingError(BlendmeshError, ValueError):
    """A fairness setting is not a usable number; the message names it."""


def whole_numbers(env: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, int]:
    """field -> the value of its setting in ``env``, for the settings set; each must be a
    whole number of at least 1 (FairnessSettingError names the one that is not)."""
    values = {}
    for name, setting in settings.items():
        raw = (env.get(setting) or "").strip()
        if not raw:
            continue
        if not raw.isdigit() or int(raw) < 1:
            raise FairnessSettingError(
                f"{setting}={raw[:32]!r} must be a whole number of at least 1"
            )
        values[name] = int(raw)
    return values


@dataclass(frozen=True)
class Limits:
    """One user's share. The defaults leave an artist's tools, a console and an agent room
    to work at once, and keep one user to a few percent of a door's capacity."""

    requests_per_second: int = 50
    burst: int = 100
    bytes_per_second: int = 16 * 1024 * 1024
    bytes_burst: int = 64 * 1024 * 1024
    in_flight: int = 16

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Limits:
        return cls(**whole_numbers(env, {f.name: SETTINGS[f.name] for f in fields(cls)}))


@dataclass(frozen=True)
class Refusal:
    """Why a request was not admitted, and after how many seconds it would be.

    ``told`` is False once the user has been told as often a second as they may send:
    a door that need not answer (the bus door; HTTP always answers) drops the rest of a
    flood unanswered, so refusing it costs no more than reading it."""

    message: str
    retry_after: float
    told: bool = True
    # Past even that, by ``FLOOD_FACTOR`` times the share: a login to suspend at the server
    # (services/runtime/server/suspensions.py), since the door must read all that it sends.
    flooding: bool = False


class _Bucket:
    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate, self.capacity = rate, capacity
        self.tokens, self.stamp = capacity, now

    def wait(self, amount: float, now: float) -> float:
        """0 after taking ``amount``; else how long until it could be taken (nothing taken)."""
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        amount = min(amount, self.capacity)  # one request larger than the burst still passes
        if self.tokens + 1e-9 >= amount:  # float refills land a hair short
            self.tokens -= amount
            return 0.0
        return (amount - self.tokens) / self.rate


class _Share:
    def __init__(self, limits: Limits, now: float) -> None:
        self.requests = _Bucket(limits.requests_per_second, limits.burst, now)
        self.bytes = _Bucket(limits.bytes_per_second, limits.bytes_burst, now)
        self.refusals = _Bucket(limits.requests_per_second, limits.burst, now)
        self.untold = _Bucket(
            limits.requests_per_second * FLOOD_FACTOR, limits.burst * FLOOD_FACTOR, now
        )
        self.untold_bytes = _Bucket(
            limits.bytes_per_second * BYTES_FLOOD_FACTOR,
            limits.bytes_burst * BYTES_FLOOD_FACTOR,
            now,
        )
        self.in_flight = 0


def _seconds(wait: float) -> str:
    return f"{math.ceil(wait * 10) / 10:.1f} s"


class Fairness:
    """The shares of every user a door has seen lately."""

    def __init__(self, limits: Limits, clock: Callable[[], float]) -> None:
        self.limits = limits
        self._clock = clock
        self._shares: OrderedDict[str, _Share] = OrderedDict()

    def _share(self, user: str, now: float) -> _Share:
        share = self._shares.pop(user, None)
        if share is None:
            share = _Share(self.limits, now)
            while len(self._shares) >= MAX_USERS:
                idle = next((u for u, s in self._shares.items() if not s.in_flight), None)
                if idle is None:
                    break
                del self._shares[idle]
        self._shares[user] = share  # most recently seen last
        return share

    def admit(self, user: str, size: int) -> Refusal | None:
        """None and a slot taken when ``user`` may send a request of ``size`` bytes now;
        else why not. Every admitted request is given back with ``done``."""
        now = self._clock()
        share = self._share(user, now)
        refusal = self._refusal(share, size, now)
        if refusal is None:
            share.in_flight += 1
            return None
        told = share.refusals.wait(1, now) == 0
        flooding = not told and (
            share.untold.wait(1, now) > 0 or share.untold_bytes.wait(size, now) > 0
        )
        return Refusal(refusal.message, refusal.retry_after, told, flooding)

    def _refusal(self, share: _Share, size: int, now: float) -> Refusal | None:
        limits = self.limits
        if share.in_flight >= limits.in_flight:
            return Refusal(
                f"you have {share.in_flight} requests under way, the most one user may have "
                f"({SETTINGS['in_flight']}); wait for one to be answered",
                1.0,
            )
        wait = share.requests.wait(1, now)
        if wait:
            return Refusal(
                f"you sent more than {limits.requests_per_second} requests a second "
                f"({SETTINGS['requests_per_second']}); try again in {_seconds(wait)}",
                wait,
            )
        wait = share.bytes.wait(size, now)
        if wait:
            share.requests.tokens += 1  # not sent after all
            return Refusal(
                f"you sent more than {limits.bytes_per_second:,} bytes a second "
                f"({SETTINGS['bytes_per_second']}); try again in {_seconds(wait)}",
                wait,
            )
        return None

    def done(self, user: str) -> None:
        share = self._shares.get(user)
        if share is not None and share.in_flight:
            share.in_flight -= 1
