"""The gateway against its own OpenAPI document: no 5xx, and only documented statuses.

The gateway runs on a real mesh and a real socket in a thread of its own (the mesh's NATS
connections belong to that thread's loop); schemathesis calls it over HTTP like a client.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from services.doors.cli.mesh import Mesh
from services.doors.core.fairness import SETTINGS
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

AUTH = {"Authorization": "Bearer tok-ana"}


def excluded(case: schemathesis.Case) -> list[schemathesis.CheckFunction]:
    """The import routes' bodies are a .blend or an asset file, which a schema cannot
    describe (it says binary); a schema-valid body that is not one is rightly refused 422.
    So are a batch of chunks (frames of lengths and bytes) and a manifest whose sizes must
    add up to its ``bytes`` (docs/http-api.md, a push by changed chunks). A view's
    query has a rule across its fields no schema holds: ``shading=rendered`` draws at most
    1024 pixels a side, while the other shadings take 2048, so a schema-valid rendered view
    of 1025 and more is rightly refused 422 too. A render job's frames and size are words
    ("1-240", "640x360") every door parses alike (contracts/renders.py), with bounds across
    their parts (a range that runs backwards, a cost over the user's budget) that no
    schema holds, so a schema-valid job may be refused 422 (docs/renders.md). A project
    member's name must be printable, which a pattern the fuzzer reads cannot say (it has
    no Unicode categories), so a schema-valid name of control or unassigned characters is
    rightly refused 422 too (docs/studio.md). A replay whose ``since`` comes after its
    ``until`` is refused 422 naming the swap, a rule across two fields."""
    path = case.operation.path
    refused_rightly = path.endswith(
        ("/import", "/assets", "/chunks", "/view.png", "/renders")
    ) or path.endswith(("/members/{member}", "/api/replays"))
    return [positive_data_acceptance] if refused_rightly else []


class LiveGateway:
    """A mesh plus the gateway on a free port, in a thread with its own event loop."""

    def __init__(self, home: Path) -> None:
        # The fuzzer sends hundreds of requests a second; a 429 for each would test nothing.
        shares = {name: "1000000" for name in SETTINGS.values()}
        self.settings = Settings(
            home=home, prefix="bmschema", user="ana", previews=False, env=shares
        )
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            async with Mesh(self.settings) as mesh:
                bus = await Bus.open(
                    mesh.url, self.settings.prefix, "test-schema-gateway", mesh.login("client")
                )
                app = create_app(self.settings, bus, Tokens({"tok-ana": "ana"}), run_timeout=60)
                server = GatewayServer(app, port=0)
                try:
                    self.url = await server.start()
                    self._ready.set()
                    await self._stop.wait()
                finally:
                    await server.stop()
                    await bus.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread, which raises it
            self._error = exc
            self._ready.set()

    def __enter__(self) -> LiveGateway:
        self._thread.start()
        self._ready.wait(timeout=120)
        if self._error is not None or not self.url:
            raise RuntimeError("the gateway did not start") from self._error
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=60)


# The document comes from the app itself (building it needs no mesh); the calls go to a
# live gateway. (schemathesis' lazy ``from_fixture`` loader does not run on pytest 9.)
schema = schemathesis.openapi.from_dict(
    create_app(Settings(home=Path("unused")), bus=None, tokens=Tokens({})).openapi()  # type: ignore[arg-type]
)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with LiveGateway(tmp_path_factory.mktemp("schema-home")) as gateway:
        yield gateway


@schema.parametrize()
@settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_gateway_when_fuzzed_answers_only_documented_statuses(
    case: schemathesis.Case, live: LiveGateway
) -> None:
    case.call_and_validate(
        base_url=live.url, headers=AUTH, timeout=90, excluded_checks=excluded(case)
    )


def test_gateway_when_driven_as_workflows_answers_only_documented_statuses(
    live: LiveGateway,
) -> None:
    """Stateful: schemathesis chains calls through the links it infers between routes
    (a run's id into its audit trail, an approval's id into its resolution, ...)."""

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, object]:
            return {"base_url": live.url, "headers": AUTH, "timeout": 90}

        def validate_response(
            self,
            response: Any,
            case: schemathesis.Case,
            additional_checks: list[schemathesis.CheckFunction] | None = None,
            **kwargs: Any,
        ) -> None:
            case.validate_response(
                response,
                additional_checks=additional_checks,
                excluded_checks=excluded(case),
                transport_kwargs=kwargs or None,
            )

    Workflow.run(
        settings=settings(
            max_examples=4,
            stateful_step_count=4,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
