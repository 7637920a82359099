"""JetStream's state as ``blendmesh status`` shows it: storage against the account's
limits, and each of the mesh's streams with its replicas and leader.

Read with what every role may read (``$JS.API.INFO``, ``$JS.API.STREAM.LIST``), so the
CLI and the gateway ask as the ``client`` they are.
"""

from __future__ import annotations

import asyncio

from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AccountInfo, StreamInfo
from nats.js.errors import APIError, NotFoundError, ServiceUnavailableError

from contracts import subjects
from contracts.health import JetStreamStatus, StreamStatus
from services.runtime.nats import access

BEHIND = 100  # operations a replica may lag before the snapshot says so


def mesh_streams(prefix: str) -> set[str]:
    """The streams of the mesh on ``prefix``: its logs, KV buckets and object stores."""
    names = {subjects.stream_name(prefix), subjects.audit_stream_name(prefix)}
    names.add(subjects.render_queue_name(prefix))
    names |= {f"KV_{access.bucket(prefix, name)}" for name in access.KV_BUCKETS}
    names |= {f"OBJ_{access.bucket(prefix, name)}" for name in access.OBJECT_STORES}
    return names


def stream_status(info: StreamInfo) -> StreamStatus:
    cluster = info.cluster
    problems = []
    for peer in (cluster.replicas or []) if cluster is not None else []:
        if peer.offline:
            problems.append(f"replica {peer.name} is offline")
        elif not peer.current or (peer.lag or 0) > BEHIND:
            problems.append(f"replica {peer.name} is {peer.lag or 0} operations behind")
    return StreamStatus(
        name=info.config.name or "",
        replicas=info.config.num_replicas or 1,
        leader=cluster.leader if cluster is not None else None,
        messages=info.state.messages,
        bytes=info.state.bytes,
        problems=problems,
    )


def jetstream_status(account: AccountInfo, streams: list[StreamStatus]) -> JetStreamStatus:
    limit = account.limits.max_storage if account.limits.max_storage > 0 else None
    return JetStreamStatus(
        ok=True,
        storage=account.storage,
        storage_limit=limit,
        storage_left=None if limit is None else limit - account.storage,
        streams=sorted(streams, key=lambda s: s.name),
    )


async def _stream(js: JetStreamContext, name: str, wait: float) -> StreamStatus | None:
    """One stream's state; None when it does not exist. (``STREAM.LIST`` would be one
    request, but a single server leaves the leader out of it.)"""
    try:
        return stream_status(await asyncio.wait_for(js.stream_info(name), wait))
    except NotFoundError:
        return None
    except (NatsError, TimeoutError) as exc:  # a cluster's stream without a leader
        return StreamStatus(
            name=name,
            replicas=None,
            leader=None,
            problems=[f"it did not answer within {wait:g} s ({type(exc).__name__})"],
        )


async def jetstream_state(js: JetStreamContext, prefix: str, wait: float = 1.0) -> JetStreamStatus:
    """JetStream's answer within ``wait`` seconds, or why there was none; then each of the
    mesh's streams within ``wait`` seconds more."""
    try:
        account = await asyncio.wait_for(js.account_info(), wait)
    except ServiceUnavailableError as exc:
        error = (
            "JetStream does not answer: the NATS server has no JetStream, or it stopped"
            if exc.err_code is None  # nobody answered at all
            else f"JetStream is unavailable ({exc.description}); on a cluster, start a "
            "majority of its servers"
        )
    except TimeoutError:
        error = (
            f"JetStream did not answer within {wait:g} s; on a cluster, start a majority of "
            "its servers"
        )
    except APIError as exc:
        error = f"JetStream refused to describe itself ({exc.description or exc.code})"
    except NatsError as exc:
        error = f"JetStream could not be asked ({type(exc).__name__}): is NATS up?"
    else:
        names = sorted(mesh_streams(prefix))
        found = await asyncio.gather(*(_stream(js, name, wait) for name in names))
        return jetstream_status(account, [s for s in found if s is not None])
    return JetStreamStatus(ok=False, error=error)
