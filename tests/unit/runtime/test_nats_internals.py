"""The nats-py internals blendmesh depends on, checked on the installed nats-py.

``services.runtime.nats.naming`` overrides ``JetStreamContext._jsm``, a private property, because
nats-py creates ephemeral and ordered consumers through it and offers no public hook. If a
nats-py release renames it, stops creating consumers through it, or changes the manager's
constructor, these tests fail here instead of consumers going out unnamed (and refused by
the JetStream API permissions of docs/adr/0007).
"""

from __future__ import annotations

import inspect
import re

from nats.aio.client import Client
from nats.js import JetStreamContext, JetStreamManager, api
from nats.js.api import ConsumerConfig

from services.runtime.nats.naming import Connection, NamingJetStream, _ephemeral, _NamingManager


def test_jsm_is_a_property_of_the_installed_jetstream_context() -> None:
    jsm = inspect.getattr_static(JetStreamContext, "_jsm", None)
    assert isinstance(jsm, property), (
        "nats-py no longer has JetStreamContext._jsm as a property; "
        "services/runtime/nats/naming.py must find another way to name consumers"
    )


def test_nats_py_creates_every_consumer_through_jsm_add_consumer() -> None:
    # subscribe (push, ordered included), pull_subscribe, and the ordered consumer recreated
    # after a gap: each must go through the manager the override returns.
    for where in (
        JetStreamContext.subscribe,
        JetStreamContext.pull_subscribe,
        JetStreamContext._JSI.recreate_consumer,
    ):
        source = inspect.getsource(where)
        assert re.search(r"_jsm\.add_consumer\(", source), (
            f"nats-py's {where.__qualname__} no longer creates consumers through "
            "_jsm.add_consumer; services/runtime/nats/naming.py would not name them"
        )
        # Any other way to send a consumer create request would bypass the override.
        assert "CONSUMER.CREATE" not in source, where.__qualname__


def test_jetstream_manager_constructor_takes_conn_prefix_timeout() -> None:
    params = inspect.signature(JetStreamManager.__init__).parameters
    assert list(params)[:4] == ["self", "conn", "prefix", "timeout"]


def test_jetstream_context_constructor_takes_conn_prefix_domain_timeout() -> None:
    params = inspect.signature(JetStreamContext.__init__).parameters
    assert list(params)[:5] == ["self", "conn", "prefix", "domain", "timeout"]


def test_manager_add_consumer_accepts_the_keywords_the_ordered_reset_passes() -> None:
    params = inspect.signature(JetStreamManager.add_consumer).parameters
    assert {"stream", "config", "timeout"} <= set(params)


def test_naming_manager_when_domain_is_given_uses_the_same_prefix_as_nats_py() -> None:
    nc = Client()
    for kwargs in ({}, {"prefix": "$JS.hub.API"}, {"domain": "leaf"}, {"timeout": 9.0}):
        ours = NamingJetStream(nc, **kwargs)._jsm
        theirs = JetStreamContext(nc, **kwargs)._jsm
        assert isinstance(ours, _NamingManager)
        assert (ours._prefix, ours._timeout, ours._nc) == (
            theirs._prefix,
            theirs._timeout,
            theirs._nc,
        ), kwargs


def test_connection_jetstream_when_asked_returns_a_naming_context() -> None:
    js = Connection().jetstream(timeout=3.0)
    assert isinstance(js, NamingJetStream)
    assert js._jsm._timeout == 3.0
    assert js._jsm._prefix == api.DEFAULT_PREFIX


def test_ephemeral_when_unnamed_gets_a_random_eph_name() -> None:
    first = _ephemeral(ConsumerConfig())
    second = _ephemeral(ConsumerConfig())
    assert re.fullmatch(r"eph_[0-9a-f]{16}", first.name or "")
    assert first.name != second.name


def test_ephemeral_when_named_or_durable_keeps_the_name() -> None:
    assert _ephemeral(ConsumerConfig(name="mine")).name == "mine"
    durable = _ephemeral(ConsumerConfig(durable_name="policy"))
    assert durable.name is None
    assert durable.durable_name == "policy"
