"""The bus connection: joining NATS (with the login policy of ``login``) and waiting for
JetStream. Streams and buckets are set up in ``streams``, events appended by ``publishers``.

On a JetStream cluster every stream, bucket and object store is created with
``BLENDMESH_REPLICAS`` copies (see ``streams.use_replicas``), and ``NATS_URL`` may list
several servers, comma separated: a client whose server dies moves to another.
"""

from __future__ import annotations

import logging
from typing import Any

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.errors import NoServersError
from nats.js import JetStreamContext
from nats.js.errors import ServiceUnavailableError

from contracts.errors import BlendmeshError
from services.runtime.nats import access
from services.runtime.nats.access import Login
from services.runtime.nats.login import (
    LoginRefused,
    joins_anonymously,
    servers,
    url_user,
    warn_anonymous,
)
from services.runtime.nats.naming import Connection
from services.runtime.nats.ready import READY_WAIT, NotReady, until_ready
from services.runtime.nats.retry import GaveUp, until

log = logging.getLogger("blendmesh.bus")


class JetStreamUnavailable(BlendmeshError, ConnectionError):
    """The server is up but JetStream does not answer (a cluster without a meta leader)."""


PROBE_TIMEOUT = 2  # seconds one connection attempt waits for the server's hello (whole: nats-py)
RETRY_PAUSE = 0.5  # seconds between attempts while a server does not listen yet


async def connect(url: str, name: str, login: Login | None = None, wait: float = 30.0) -> Client:
    """Connect with reconnects forever, so a restarted server is rejoined, not fatal.

    The first connection is retried for ``wait`` seconds too: under a Procfile the
    services may start before nats-server listens. A refused login is not retried.
    ``url`` may list a cluster's servers, comma separated: any of them will do, and the
    client moves to another when its server goes away.
    """

    async def _error(exc: Exception) -> None:
        log.warning("%s: nats error: %s", name, exc)

    async def _quiet(exc: Exception) -> None:
        pass  # the probe's failure is raised below, with what to do about it

    identity: dict[str, Any] = {"user": login.user, "password": login.password} if login else {}
    role = login.user if login else url_user(url)
    if role in access.ROLES:  # replies and deliveries arrive where only the role may listen
        identity["inbox_prefix"] = access.inbox_prefix(role)
    pool = servers(url)

    async def join() -> Client:
        # One attempt without reconnects first: with them, nats-py retries a refused
        # login forever instead of reporting it. Its first connect tries each server
        # max_reconnect_attempts times (60, 2 s apart, by default) even so: twice is
        # enough here, where ``until`` waits and tries again until ``wait``.
        probe = Client()
        try:
            await probe.connect(
                pool,
                name=name,
                allow_reconnect=False,
                max_reconnect_attempts=1,
                reconnect_time_wait=0,
                # A socket that accepts and says nothing, or an address that drops
                # packets, is given up within the wait, not nats-py's own 2 s.
                connect_timeout=max(1, min(PROBE_TIMEOUT, int(wait))),
                error_cb=_quiet,
                **identity,
            )
        finally:
            await probe.close()  # a refused probe's socket too
        nc = Connection()
        options: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.25}
        await nc.connect(pool, name=name, error_cb=_error, **options, **identity)
        if joins_anonymously(url, login):
            warn_anonymous(url)
        return nc

    try:
        return await until(
            f"NATS at {url}", join, wait, pause=RETRY_PAUSE, retry_on=(OSError, NoServersError)
        )
    except GaveUp as gave_up:
        said = "no answer" if isinstance(gave_up.cause, TimeoutError) else str(gave_up.cause)
        raise ConnectionError(
            f"cannot reach NATS at {url} ({said or type(gave_up.cause).__name__}); start it "
            "with `blendmesh up` or fix NATS_URL"
        ) from None
    except NatsError as exc:
        if "authorization" not in str(exc).lower():
            raise
        who = f"user {login.user!r}" if login else "an anonymous client"
        raise LoginRefused(
            f"NATS at {url} refused {who} ({name}); use the credentials file of the "
            "mesh that runs it (BLENDMESH_NATS_CREDENTIALS, or the same --home), or put "
            "user:password in NATS_URL"
        ) from None


# A server answers ``account_info`` at once when it has a meta leader, and drops it when
# it has none: a fresh three-server cluster elects one in about 0.4 to 0.9 s, so the probe
# tries again after 0.5 s (then 1, 1.5, ... s), where a first attempt of ATTEMPT_WITHIN
# (2 s, for steps that create and place streams) held every start a second past the
# election.
PROBE_WITHIN = 0.5


async def wait_for_jetstream(js: JetStreamContext, wait: float = READY_WAIT) -> None:
    """Return once JetStream answers. A fresh cluster answers nothing until a majority of
    its servers have met and elected a meta leader (several seconds); streams created
    before then would time out."""

    async def answers() -> None:
        try:
            await js.account_info()
        except ServiceUnavailableError as exc:
            if exc.err_code is None:  # no one answers at all: a server without JetStream
                raise JetStreamUnavailable(
                    "the NATS server has no JetStream; blendmesh needs nats-server -js"
                ) from None
            raise

    try:
        await until_ready("JetStream", answers, wait, first_attempt=PROBE_WITHIN)
    except NotReady as exc:
        raise JetStreamUnavailable(str(exc)) from None
