"""Composition root of the policy service."""

from __future__ import annotations

from functools import partial

from services.executor.client import KvCatalog, SceneFiles
from services.policy.allowlist import AllowlistResponders, KvAllowlist
from services.policy.cedar import PROFILE_ENV, CedarPolicy, policy_folder
from services.policy.handlers import PolicyHandlers, expiry_subjects, filter_subjects
from services.runtime.nats.history import read_run, run_kinds
from services.runtime.server.users import FILE_NAME, UsersFile
from services.runtime.service import health
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.host import Bus, ConsumerService
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings

# An approval is looked at again at most every 30 s until it expires: enough deliveries
# for a TTL of weeks, so the expiry timer never becomes a dead letter.
EXPIRY_MAX_DELIVER = 100_000


async def start(settings: Settings, bus: Bus) -> ConsumerService:
    # A malformed policy, or an unknown profile, stops the start here.
    folder = policy_folder(settings.policy_dir, settings.env.get(PROFILE_ENV))
    engine = CedarPolicy.load(folder)
    allowlist = KvAllowlist(bus.js, bus.prefix)
    handlers = PolicyHandlers(
        engine=engine,
        catalog=KvCatalog(bus.js, bus.prefix),
        history=partial(read_run, bus.js, bus.prefix),
        allowlist=allowlist,
        scene_owner=SceneFiles(bus.js, bus.prefix).owner,
        workspace=settings.home,
        approval_ttl=settings.approval_ttl,
        approvers=UsersFile(settings.home / FILE_NAME).approvers,
        kinds=partial(run_kinds, bus.js, bus.prefix),
        projects=projects_of(bus).current,
    )
    service = ConsumerService("policy")
    responders = AllowlistResponders(bus.nc, bus.prefix, allowlist, bus.publisher)
    await responders.start()
    service.closers.append(responders.stop)
    for spec in consumers(handlers, settings, bus.prefix):
        await service.add(bus, spec)
    registered = await health.register(
        bus,
        "policy",
        health.consumer_stats(bus.js, bus.prefix, ["policy", "policy-expiry"], service.problems),
    )
    service.closers.append(registered.stop)
    return service


def consumers(handlers: PolicyHandlers, settings: Settings, prefix: str) -> list[ConsumerSpec]:
    """Policy's consumers as it runs them; an in-memory mesh for tests wires these."""
    return [
        ConsumerSpec(
            durable="policy",
            filter_subjects=filter_subjects(prefix),
            handler=handlers.handle,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
        ConsumerSpec(
            durable="policy-expiry",
            filter_subjects=expiry_subjects(prefix),
            handler=handlers.handle_expiry,
            ack_wait=settings.ack_wait,
            max_deliver=EXPIRY_MAX_DELIVER,
            backoff_cap=30.0,
        ),
    ]
