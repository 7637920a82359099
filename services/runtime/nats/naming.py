"""A nats-py client whose JetStream contexts give every consumer they create a name.

nats-py creates ordered and ephemeral consumers through ``JetStreamContext._jsm``, a private
property with no public hook; the override below is the one place blendmesh depends on
nats-py internals, and tests/unit/runtime/test_nats_internals.py fails if nats-py changes it.
"""

from __future__ import annotations

import secrets
from typing import Any

from nats.aio.client import Client
from nats.js import JetStreamContext, JetStreamManager, api
from nats.js.api import ConsumerConfig, ConsumerInfo


def _ephemeral(config: ConsumerConfig) -> ConsumerConfig:
    """Give a consumer without a name one, so that its create request names it.

    The create subject without a consumer name lets the request body pick any consumer,
    a service's durable included; access.py refuses that subject to every role but admin.
    """
    if config.name or config.durable_name:
        return config
    return config.evolve(name=f"eph_{secrets.token_hex(8)}")


class _NamingManager(JetStreamManager):
    async def add_consumer(
        self,
        stream: str,
        config: ConsumerConfig | None = None,
        timeout: float | None = None,
        **params: Any,
    ) -> ConsumerInfo:
        named = _ephemeral((config or ConsumerConfig()).evolve(**params))
        return await super().add_consumer(stream, named, timeout)


class NamingJetStream(JetStreamContext):
    """A JetStream context whose consumers, ephemeral and ordered ones too, all have names."""

    def __init__(
        self,
        conn: Client,
        prefix: str = api.DEFAULT_PREFIX,
        domain: str | None = None,
        timeout: float = 5,
        **opts: Any,
    ) -> None:
        super().__init__(conn, prefix, domain, timeout, **opts)
        # Kept from the public arguments rather than read back from the context's private
        # fields; a domain replaces the prefix as nats-py's own constructor does.
        self._manager_args: dict[str, Any] = {
            "conn": conn,
            "prefix": f"$JS.{domain}.API" if domain is not None else prefix,
            "timeout": timeout,
        }

    @property
    def _jsm(self) -> JetStreamManager:  # nats-py creates ordered consumers through this
        return _NamingManager(**self._manager_args)

    async def add_consumer(
        self,
        stream: str,
        config: ConsumerConfig | None = None,
        timeout: float | None = None,
        **params: Any,
    ) -> ConsumerInfo:
        return await self._jsm.add_consumer(stream, config, timeout, **params)


class Connection(Client):
    """A NATS client whose JetStream contexts name every consumer they create."""

    def jetstream(self, **opts: Any) -> JetStreamContext:
        return NamingJetStream(self, **opts)
