"""How an MCP door asks for an approval (asking.how_to_ask), and the sealed approval an
MCP Apps card answers with (sealed.Sealer): who may open it, until when, in one spelling."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import pytest

from services.doors.mcp.asking import how_to_ask
from services.doors.mcp.sealed import BadSeal, Sealed, Sealer
from tests.support.checked_session import APPS, URL_ONLY

SEALED = Sealed(
    user="ana", run_id="run-1", approval_id="appr-1", request_hash="rh",
    code_sha256=("a" * 64,), expires_at=1000.0,
)  # fmt: skip


class _Session:
    def __init__(self, capabilities: types.ClientCapabilities | None) -> None:
        self.client_params = (
            None
            if capabilities is None
            else types.InitializeRequestParams(
                protocolVersion="2025-11-25",
                capabilities=capabilities,
                clientInfo=types.Implementation(name="h", version="1"),
            )
        )


def asks(capabilities: types.ClientCapabilities | None, console: str | None = "http://c") -> Any:
    return how_to_ask(_Session(capabilities), console)  # type: ignore[arg-type]


FORMS = types.ClientCapabilities(elicitation=types.ElicitationCapability())  # before modes
BOTH = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(
        form=types.FormElicitationCapability(), url=types.UrlElicitationCapability()
    )
)


def test_how_to_ask_when_client_declares_picks_card_form_url_or_command() -> None:
    both_and_apps = types.ClientCapabilities(elicitation=BOTH.elicitation, **APPS.model_extra)
    assert asks(both_and_apps) == "card"  # the richest a host shows, in the host
    assert asks(APPS) == "card"
    assert asks(FORMS) == "form" and asks(BOTH) == "form"
    assert asks(URL_ONLY) == "url"
    assert asks(URL_ONLY, console=None) == "command"  # no page to open
    assert asks(types.ClientCapabilities()) == "command" and asks(None) == "command"


def test_how_to_ask_when_apps_declared_without_the_card_mime_does_not_draw_it() -> None:
    other = types.ClientCapabilities(
        extensions={"io.modelcontextprotocol/ui": {"mimeTypes": ["text/plain"]}}
    )  # type: ignore[call-arg]
    assert asks(other) == "command"


def test_seal_when_opened_by_its_user_in_time_names_what_was_sealed() -> None:
    sealer = Sealer.fresh()
    assert sealer.open(sealer.seal(SEALED), "ana", now=999.0) == SEALED


@pytest.mark.parametrize(
    ("user", "now"), [("ben", 999.0), ("ana", 1000.0), ("Ana", 1.0), ("", 1.0)]
)
def test_seal_when_another_user_or_expired_is_refused(user: str, now: float) -> None:
    sealer = Sealer.fresh()
    with pytest.raises(BadSeal, match="not valid for you"):
        sealer.open(sealer.seal(SEALED), user, now)


def test_seal_when_altered_respelled_or_another_servers_is_refused() -> None:
    sealer = Sealer.fresh()
    seal = sealer.seal(SEALED)
    body, mac = seal.split(".")
    other = Sealer.fresh().seal(SEALED)
    forged_body = sealer.seal(Sealed(**{**SEALED.__dict__, "user": "ben"})).split(".")[0]
    for bad in (f"{forged_body}.{mac}", seal + "=", f"{body}.{mac}==", other, "", "a.b.c", 7):
        with pytest.raises(BadSeal):
            sealer.open(bad, "ana", now=1.0)  # type: ignore[arg-type]
