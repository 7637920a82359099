"""The BLENDMESH_OAUTH_* settings, the metadata document and the challenge it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.doors.gateway.oauth.resource import challenge, document, metadata_url
from services.doors.gateway.oauth.settings import ASYMMETRIC, OAuthSettings, oauth_settings
from services.runtime.service.settings import SettingsError

ON = {
    "BLENDMESH_OAUTH_ISSUER": "https://id.example",
    "BLENDMESH_OAUTH_RESOURCE": "https://blend.example/mcp",
    "BLENDMESH_OAUTH_SUBJECTS": "client-ana=ana, auth0|42=ben",
}


def test_settings_when_no_issuer_is_set_are_off() -> None:
    assert oauth_settings({}) is None


def test_settings_when_set_read_issuer_resource_subjects_and_defaults() -> None:
    rules = oauth_settings(ON)
    assert rules is not None
    assert (rules.issuer, rules.resource, rules.subject_claim) == (
        "https://id.example",
        "https://blend.example/mcp",
        "sub",
    )
    assert rules.user_of("auth0|42") == "ben" and rules.user_of("nobody") is None
    assert rules.algorithms == ASYMMETRIC and "HS256" not in rules.algorithms
    assert (rules.leeway, rules.scopes) == (30, ())


def test_settings_when_a_subjects_file_is_named_read_it_with_the_list(tmp_path: Path) -> None:
    listed = tmp_path / "subjects"
    listed.write_text("# who is who\nspiffe://x/y=z=carla\n\n")
    rules = oauth_settings({**ON, "BLENDMESH_OAUTH_SUBJECTS_FILE": str(listed)})
    assert rules is not None and rules.user_of("spiffe://x/y=z") == "carla"
    listed.write_text("client-ana=mallory\n")
    with pytest.raises(SettingsError, match="to two users"):
        oauth_settings({**ON, "BLENDMESH_OAUTH_SUBJECTS_FILE": str(listed)})
    with pytest.raises(SettingsError, match="cannot read it"):
        oauth_settings({**ON, "BLENDMESH_OAUTH_SUBJECTS_FILE": str(tmp_path / "none")})


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"BLENDMESH_OAUTH_ISSUER": ""}, "BLENDMESH_OAUTH_ISSUER is not"),
        ({"BLENDMESH_OAUTH_RESOURCE": ""}, "BLENDMESH_OAUTH_RESOURCE is not"),
        ({"BLENDMESH_OAUTH_ISSUER": "http://id.example"}, "https://"),
        ({"BLENDMESH_OAUTH_ISSUER": "ftp://id.example"}, "not an issuer URL"),
        ({"BLENDMESH_OAUTH_RESOURCE": "blend.example/mcp"}, "not a resource identifier"),
        ({"BLENDMESH_OAUTH_RESOURCE": "https://b.example/#x"}, "no #fragment"),
        ({"BLENDMESH_OAUTH_RESOURCE": 'https://b.example/"x'}, "not a resource identifier"),
        ({"BLENDMESH_OAUTH_SUBJECTS": "no-user-here"}, "not subject=user"),
        ({"BLENDMESH_OAUTH_SUBJECTS": "s=bad user"}, "not valid"),
        ({"BLENDMESH_OAUTH_SUBJECTS": "s=ana,s=ben"}, "to two users"),
        ({"BLENDMESH_OAUTH_ALGORITHMS": "RS256,HS256"}, "HS256"),
        ({"BLENDMESH_OAUTH_ALGORITHMS": "none"}, "public key only"),
        ({"BLENDMESH_OAUTH_LEEWAY": "3600"}, "0 to 300"),
        ({"BLENDMESH_OAUTH_LEEWAY": "-1"}, "0 to 300"),
        ({"BLENDMESH_OAUTH_SCOPES": 'a "b'}, "without quotes"),
    ],
)
def test_settings_when_wrong_name_the_variable_and_the_fix(
    changed: dict[str, str], named: str
) -> None:
    with pytest.raises(SettingsError, match=named):
        oauth_settings({**ON, **changed})


def test_settings_when_the_issuer_is_loopback_http_are_accepted_for_a_local_provider() -> None:
    rules = oauth_settings({**ON, "BLENDMESH_OAUTH_ISSUER": "http://127.0.0.1:4000"})
    assert rules is not None and rules.issuer == "http://127.0.0.1:4000"


def test_metadata_when_served_names_the_issuer_resource_and_header_bearer_only() -> None:
    rules = OAuthSettings(issuer="https://id.example", resource="https://b.example/mcp")
    doc = document(rules)
    assert doc["resource"] == "https://b.example/mcp"
    assert doc["authorization_servers"] == ["https://id.example"]
    assert doc["bearer_methods_supported"] == ["header"] and "scopes_supported" not in doc
    scoped = OAuthSettings(issuer="https://id.example", resource="https://b.example", scopes=("x",))
    assert document(scoped)["scopes_supported"] == ["x"]


def test_metadata_url_when_the_resource_has_a_path_puts_the_well_known_before_it() -> None:
    assert metadata_url("https://b.example/mcp") == (
        "https://b.example/.well-known/oauth-protected-resource/mcp"
    )
    assert metadata_url("https://b.example") == (
        "https://b.example/.well-known/oauth-protected-resource"
    )


def test_challenge_when_oauth_is_on_names_the_metadata_and_the_error() -> None:
    rules = OAuthSettings(issuer="https://id.example", resource="https://b.example/mcp")
    assert challenge(None) == 'Bearer realm="blendmesh"'
    assert challenge(rules, "invalid_token") == (
        'Bearer realm="blendmesh", resource_metadata='
        '"https://b.example/.well-known/oauth-protected-resource/mcp", error="invalid_token"'
    )
