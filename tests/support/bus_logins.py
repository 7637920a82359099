"""A person's own NATS login to a mesh, as a program on the bus door makes it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from nats.aio.client import Client
from nats.errors import Error as NatsError

from services.runtime.nats import access


async def _quiet(exc: Exception) -> None:
    pass  # a refused login is retried below; nats-py would log each one


async def user_login(
    url: str, seed: bytes, user: str, within: float = 10.0, **options: Any
) -> Client:
    """``user`` connected with the NKey ``seed`` (and nats-py's connect ``options``). The
    server admits a key registered after it started once its watcher reloads the users
    (about a second), so a refused login, or one reset midway, is tried again for
    ``within`` seconds; then the test fails naming the user."""
    deadline = time.monotonic() + within
    while True:
        nc = Client()
        try:
            await nc.connect(
                url,
                nkeys_seed_str=seed.decode(),
                inbox_prefix=access.user_inbox_prefix(user),
                allow_reconnect=False,
                error_cb=_quiet,
                **options,
            )
            return nc
        except (NatsError, OSError) as exc:
            await nc.close()
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"the server did not admit {user}'s key within {within:g} s: {exc!r}"
                ) from None
            await asyncio.sleep(0.1)
