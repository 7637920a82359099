"""How a failed ``blendmesh`` command reads: one line that says what went wrong and what to
do, and an exit code (2: fix the command or settings; 4: the mesh could not do it).

Imported only once a command has failed, so it may name every error class without any
command paying for their modules.
"""

from __future__ import annotations

from services.doors.cli.common import EXIT_MESH, EXIT_USAGE


def exit_code_for(exc: Exception) -> tuple[int, str] | None:
    """The exit code and message for a failure a person can act on; None for a bug, which
    keeps its traceback."""
    import nats.errors
    from nats.js.errors import APIError

    from services.audit.client import AuditClientError
    from services.doors.cli.mesh import MeshBusy
    from services.doors.core.client import ClientError, RunTimedOut
    from services.policy.client import AllowlistError
    from services.runtime.nats.access import CredentialsError
    from services.runtime.server.embedded import EmbeddedServerError
    from services.runtime.service.host import ServiceFailed
    from services.runtime.service.projects import BookBehind
    from services.runtime.service.settings import SettingsError
    from services.runtime.service.store_limits import STORE_FULL, store_full

    if isinstance(exc, RunTimedOut):  # the mesh did not finish in time: not a usage error
        return EXIT_MESH, str(exc)
    if isinstance(exc, (ClientError, SettingsError, ValueError)):
        return EXIT_USAGE, str(exc)
    if store_full(exc):
        return EXIT_MESH, STORE_FULL
    if isinstance(exc, APIError):  # JetStream refused for another reason: its own words
        return EXIT_MESH, f"JetStream refused the request: {exc.description or exc}"
    if isinstance(exc, nats.errors.TimeoutError):
        # nats-py's own words are empty ("nats: timeout"): say which side was silent.
        return EXIT_MESH, (
            "the mesh did not answer in time: NATS is reachable but a service or JetStream "
            "behind it is not (JetStream stops when its disk is full); `blendmesh status` "
            "shows which"
        )
    if isinstance(exc, nats.errors.NoRespondersError):
        return EXIT_MESH, (
            "nothing on the mesh answers this request: JetStream or the service is not "
            "running there; `blendmesh status` shows which"
        )
    if isinstance(
        exc,
        (
            MeshBusy,
            ServiceFailed,
            EmbeddedServerError,
            ConnectionError,
            CredentialsError,
            AuditClientError,
            AllowlistError,
            BookBehind,
        ),
    ):
        return EXIT_MESH, str(exc)
    return None
