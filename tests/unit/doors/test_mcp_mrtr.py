"""The pieces of an approval by Multi Round-Trip Request (services/doors/mcp/mrtr.py):
the requestState opens only for its own purpose, call and user; the person's answer is
read strictly."""

from __future__ import annotations

from typing import Any

import pytest

from services.doors.mcp import mrtr
from services.doors.mcp.sealed import REQUEST_STATE, BadSeal, Sealed, Sealer

SEALED = Sealed(
    user="ana",
    run_id="run-1",
    approval_id="apr-1",
    request_hash="h",
    code_sha256=(),
    expires_at=1000.0,
)
ARGS = {"scene_id": "s", "plan": {"operations": []}}


class _Door:
    def __init__(self) -> None:
        self.sealer = Sealer.fresh()


def _state(door: _Door, name: str = "run", args: dict[str, Any] = ARGS) -> str:
    return door.sealer.seal(SEALED, REQUEST_STATE, mrtr.request_digest(name, args))


def test_state_when_opened_on_its_own_call_names_the_approval() -> None:
    door = _Door()
    opened = mrtr.opened(door, "ana", "run", ARGS, _state(door), 999.0)  # type: ignore[arg-type]
    assert opened == (SEALED, "form")


def test_state_of_a_url_ask_opens_as_one() -> None:
    door = _Door()
    state = door.sealer.seal(SEALED, mrtr.PURPOSES["url"], mrtr.request_digest("run", ARGS))
    assert mrtr.opened(door, "ana", "run", ARGS, state, 999.0) == (SEALED, "url")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("user", "name", "args", "now"),
    [
        ("ben", "run", ARGS, 999.0),  # another user's
        ("ana", "import_asset", ARGS, 999.0),  # onto another tool
        ("ana", "run", {**ARGS, "scene_id": "t"}, 999.0),  # onto other arguments
        ("ana", "run", ARGS, 1000.0),  # expired with its approval
    ],
)
def test_state_when_replayed_elsewhere_or_late_is_refused(
    user: str, name: str, args: dict[str, Any], now: float
) -> None:
    door = _Door()
    with pytest.raises(mrtr.BadAnswer, match="not valid for you"):
        mrtr.opened(door, user, name, args, _state(door), now)  # type: ignore[arg-type]


def test_card_seal_is_no_request_state_and_back() -> None:
    door = _Door()
    card = door.sealer.seal(SEALED)
    with pytest.raises(mrtr.BadAnswer):
        mrtr.opened(door, "ana", "run", ARGS, card, 999.0)  # type: ignore[arg-type]
    with pytest.raises(BadSeal):
        door.sealer.open(_state(door), "ana", 999.0)


def test_digest_when_arguments_are_reordered_is_the_same() -> None:
    assert mrtr.request_digest("run", {"a": 1, "b": 2}) == mrtr.request_digest(
        "run", {"b": 2, "a": 1}
    )


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ({"action": "accept", "content": {"approve": True}}, "approve_once"),
        ({"action": "accept"}, "approve_once"),
        ({"action": "accept", "content": {"approve": False}}, "reject"),
        ({"action": "decline"}, "reject"),
        ({"action": "cancel"}, "reject"),
    ],
)
def test_answer_when_well_formed_is_the_persons_decision(
    answer: dict[str, Any], decision: str
) -> None:
    assert mrtr.decision_of({"approval": answer}) == decision


@pytest.mark.parametrize(
    "responses",
    [
        None,
        {},
        {"other": {"action": "accept"}},
        {"approval": "yes"},
        {"approval": {"action": "always"}},
        {"approval": {"action": "accept", "content": "yes"}},
        {"approval": {"action": "accept", "content": {"x": "y" * 5000}}},
    ],
)
def test_answer_when_malformed_names_what_to_send(responses: Any) -> None:
    with pytest.raises(mrtr.BadAnswer, match="inputResponses"):
        mrtr.decision_of(responses)


@pytest.mark.parametrize(
    ("capabilities", "forms"),
    [
        ({}, False),
        ({"elicitation": {}}, True),
        ({"elicitation": {"form": {}}}, True),
        ({"elicitation": {"url": {}}}, False),
        ({"elicitation": {"form": {}, "url": {}}}, True),
        ({"elicitation": True}, False),
    ],
)
def test_forms_are_asked_only_of_clients_that_declare_them(
    capabilities: dict[str, Any], forms: bool
) -> None:
    assert mrtr.asks_by_form(capabilities) is forms


@pytest.mark.parametrize(
    ("capabilities", "console", "mode"),
    [
        ({"elicitation": {"form": {}}}, None, "form"),
        ({"elicitation": {"url": {}}}, "http://127.0.0.1:8000", "url"),
        ({"elicitation": {"url": {}}}, None, None),  # nowhere to send the person
        ({}, "http://127.0.0.1:8000", None),
    ],
)
def test_a_2026_client_is_asked_the_way_it_declares(
    capabilities: dict[str, Any], console: str | None, mode: str | None
) -> None:
    assert mrtr.mode_for(capabilities, console) == mode
