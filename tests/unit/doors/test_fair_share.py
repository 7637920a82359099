"""The gateway's per-user share as an ASGI middleware, driven through httpx in-process."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from services.doors.core.fairness import SETTINGS, Fairness, Limits
from services.doors.gateway.auth import Authenticator, Tokens
from services.doors.gateway.fair_share import FairShare

pytestmark = pytest.mark.asyncio

AUTH = Authenticator(Tokens({"tok-mallory": "mallory", "tok-bob": "bob"}))


def client(limits: Limits, hold: asyncio.Event | None = None) -> httpx.AsyncClient:
    async def answer(request: Request) -> PlainTextResponse:
        if hold is not None:
            await hold.wait()
        return PlainTextResponse("ok")

    app = FairShare(
        Starlette(routes=[Route("/x", answer, methods=["GET", "POST"])]),
        auth=lambda: AUTH,
        fairness=Fairness(limits, asyncio.get_running_loop().time),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw")


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_share_when_a_user_sends_past_the_burst_answers_429_naming_the_setting() -> None:
    async with client(Limits(requests_per_second=1, burst=3)) as http:
        mallory = bearer("tok-mallory")
        codes = [(await http.get("/x", headers=mallory)).status_code for _ in range(3)]
        assert codes == [200, 200, 200]
        refused = await http.get("/x", headers=bearer("tok-mallory"))
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        error = refused.json()["error"]
        assert error["type"] == "TooMany" and SETTINGS["requests_per_second"] in error["message"]
        # bob has his own share
        assert (await http.get("/x", headers=bearer("tok-bob"))).status_code == 200


async def test_share_when_bytes_a_second_are_spent_answers_429() -> None:
    async with client(Limits(bytes_per_second=1000, bytes_burst=1000)) as http:
        first = await http.post("/x", content=b"x" * 900, headers=bearer("tok-bob"))
        second = await http.post("/x", content=b"x" * 900, headers=bearer("tok-bob"))
        assert (first.status_code, second.status_code) == (200, 429)
        assert SETTINGS["bytes_per_second"] in second.json()["error"]["message"]


async def test_share_when_too_many_at_once_refuses_until_one_is_answered() -> None:
    hold = asyncio.Event()
    async with client(Limits(in_flight=2), hold) as http:
        waiting = [
            asyncio.ensure_future(http.get("/x", headers=bearer("tok-bob"))) for _ in range(2)
        ]
        await asyncio.sleep(0.05)
        third = await http.get("/x", headers=bearer("tok-bob"))
        assert third.status_code == 429 and SETTINGS["in_flight"] in third.text
        hold.set()
        assert [r.status_code for r in await asyncio.gather(*waiting)] == [200, 200]
        assert (await http.get("/x", headers=bearer("tok-bob"))).status_code == 200


async def test_share_when_no_or_unknown_token_leaves_the_request_to_the_routes() -> None:
    async with client(Limits(requests_per_second=1, burst=1)) as http:
        for _ in range(3):
            assert (await http.get("/x")).status_code == 200
            assert (await http.get("/x", headers=bearer("nope"))).status_code == 200
