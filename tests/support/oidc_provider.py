"""A real OpenID provider for the OAuth tests: ``oidc-provider`` under Node (oidc/server.mjs).

``OidcProvider.start`` runs it on a free loopback port with client_credentials clients
whose access tokens are JWTs for the resource; ``token`` asks its token endpoint over
HTTP, as any OAuth client does. Two providers started on the same keys file sign with the
same key: only their issuer differs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent / "oidc"
SERVER = HERE / "server.mjs"
NPM_CI = "npm ci --prefix tests/support/oidc --no-audit --no-fund"
START_SECONDS = 30


@dataclass(frozen=True)
class Client:
    id: str
    secret: str
    ttl: int = 300  # seconds its access tokens live


def _config(workdir: Path, keys: Path, resource: str, clients: list[Client]) -> Path:
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        pytest.fail(f"the test OpenID provider's packages are not installed: run `{NPM_CI}`")
    config = workdir / f"oidc-{len(list(workdir.glob('oidc-*.json')))}.json"
    listed = [{"id": c.id, "secret": c.secret, "ttl": c.ttl} for c in clients]
    config.write_text(json.dumps({"keys": str(keys), "resource": resource, "clients": listed}))
    return config


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


class OidcProvider:
    def __init__(self, process: asyncio.subprocess.Process, issuer: str) -> None:
        self.process = process
        self.issuer = issuer
        self._secrets: dict[str, str] = {}

    @classmethod
    async def start(
        cls, workdir: Path, keys: Path, resource: str, clients: list[Client]
    ) -> OidcProvider:
        config = _config(workdir, keys, resource, clients)
        # Its warnings go to a file: a pipe nobody reads would stop it once full.
        log = config.with_suffix(".log")
        with log.open("wb") as err:
            process = await asyncio.create_subprocess_exec(
                "node",
                str(SERVER),
                str(config),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err,
            )
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_SECONDS)
            issuer = json.loads(line)["issuer"]
        except (TimeoutError, ValueError, KeyError):
            process.kill()
            await process.wait()
            pytest.fail(f"the test OpenID provider did not start: {_tail(log)}")
        provider = cls(process, issuer)
        provider._secrets = {c.id: c.secret for c in clients}
        return provider

    async def token(
        self, client: str, resource: str | None = None, scope: str | None = "blendmesh"
    ) -> str:
        """An access token for ``client`` (client_credentials), for ``resource``."""
        form = {"grant_type": "client_credentials"}
        if resource is not None:
            form["resource"] = resource
        if scope is not None:
            form["scope"] = scope
        async with httpx.AsyncClient(timeout=30) as http:
            answer = await http.post(
                f"{self.issuer}/token", data=form, auth=(client, self._secrets[client])
            )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token

    async def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # server.mjs exits when its stdin ends
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
