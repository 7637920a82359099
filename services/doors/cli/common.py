"""What every ``blendmesh`` command shares: exit codes, the bus it talks on, and how a run's
result and progress are printed."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import msgspec

from contracts.events import AnyEvent
from contracts.progress import progress_line
from contracts.receipts import RunResult
from services.doors.cli import plain
from services.doors.cli.mesh import Mesh
from services.doors.cli.screen import Piped
from services.doors.core.client import OnEvent
from services.doors.core.run_watch import Watch
from services.runtime.nats.access import CLIENT, Login
from services.runtime.nats.bus import JetStreamUnavailable
from services.runtime.nats.ready import NotReady
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_AWAITING, EXIT_MESH = 0, 1, 2, 3, 4
# Seconds a command tries the mesh in NATS_URL: a person at a prompt hears at once that
# nothing listens there, not after a service's patience (``host.CONNECT_WAIT``).
CLI_CONNECT_WAIT = 1.0
# Seconds it waits there for JetStream to answer: a healthy one answers in milliseconds; one
# that does not (disabled on a full disk, a cluster without a leader, a server that accepts
# and says nothing) would otherwise keep a person waiting for a start's patience, minutes.
CLI_READY_WAIT = 1.5
READ_SERVICES = ("audit",)


@asynccontextmanager
async def connected(
    settings: Settings, services: Sequence[str], role: str = CLIENT, session: bool = False
) -> AsyncIterator[Bus]:
    """A bus on NATS_URL, or on an embedded mesh started for this command, logged in as
    ``role`` (the doors' client login; the admin's for maintenance such as ``scenes gc``).
    ``session``: the command serves until its client leaves (``mcp``), and its embedded
    mesh renders previews as ``up``'s does."""
    if settings.nats_url:
        mesh = Mesh(settings, services=())
    elif session:
        mesh = Mesh(settings, services=services)
    else:
        mesh = one_command_mesh(settings, services)
    url = await mesh.start()
    if settings.nats_url:
        bus = await _join(settings, url, mesh.login(role))
    else:  # an embedded mesh listens, and its start already waited for JetStream
        bus = await Bus.open(
            url, settings.prefix, "blendmesh-cli", mesh.login(role), settings.replicas
        )
    try:
        yield bus
    finally:
        await bus.close()
        await mesh.stop()


def one_command_mesh(settings: Settings, services: Sequence[str]) -> Mesh:
    """The embedded mesh one command starts and stops once it has its answer. It renders
    no previews: their Blender would start as a run commits, only to be stopped before it
    rendered (a second Blender for nothing, about 1.5 s of CPU and 1 s of waiting)."""
    return Mesh(dataclasses.replace(settings, previews=False), services=services)


async def _join(settings: Settings, url: str, login: Login | None) -> Bus:
    """A bus on the running mesh at ``url``, or at once an error that says what is wrong."""
    try:
        return await Bus.open(
            url,
            settings.prefix,
            "blendmesh-cli",
            login,
            settings.replicas,
            ready_wait=CLI_READY_WAIT,
            connect_wait=CLI_CONNECT_WAIT,
        )
    except JetStreamUnavailable as exc:
        if "no JetStream" in str(exc):
            raise
        raise JetStreamUnavailable(_silent(url)) from None
    except NotReady:  # the event log did not answer: the same silence, one step later
        raise JetStreamUnavailable(_silent(url)) from None


def _silent(url: str) -> str:
    return (
        f"NATS at {url} answers, but its JetStream did not within {CLI_READY_WAIT:g} s: it "
        "stops when its store is full (free disk space where the mesh keeps its home), or a "
        "cluster has no leader yet; `blendmesh status` shows its state, or fix NATS_URL"
    )


def watch(bus: Bus, err: Screen) -> Watch:
    """Say on stderr when a followed run waits for a service nobody runs, or for one that
    says what keeps it (a store that refuses its writes)."""

    async def presence(role: str) -> int:
        from services.runtime.service import health  # only a run that waits needs it

        return len(await health.ping(bus.nc, role, prefix=bus.prefix))

    async def problems(role: str) -> list[str]:
        from services.runtime.service import health

        replies = await health.stats(bus.nc, role, prefix=bus.prefix)
        return [problem for reply in replies for problem in reply.data.problems]

    def notice(text: str) -> None:
        err.print(f"blendmesh: {text}", markup=False, highlight=False, soft_wrap=True)

    return Watch(presence=presence, notice=notice, problems=problems)


def exit_code(result: RunResult) -> int:
    return {"completed": EXIT_OK, "awaiting_confirmation": EXIT_AWAITING}.get(
        result.status, EXIT_FAILED
    )


def report(result: RunResult, as_json: bool, out: Screen) -> int:
    if as_json:
        sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    elif isinstance(out, Piped):
        for line in plain.result_lines(result):
            out.print(line, markup=False)
    else:
        from services.doors.cli import console as show  # draws with rich: a terminal's

        show.print_result(out, result)
    return exit_code(result)


def progress(err: Screen, quiet: bool) -> OnEvent:
    def on_event(event: AnyEvent) -> None:
        line = progress_line(event)
        if not line or quiet:
            return
        if isinstance(err, Piped):
            err.print(line.text, markup=False)
        else:
            from services.doors.cli import console as show  # draws with rich: a terminal's

            err.print(show.render(line), highlight=False)

    return on_event
