"""Bearer tokens: parsing BLENDMESH_API_TOKENS and its file, and looking a token up."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.doors.gateway.auth import Tokens
from services.runtime.service.settings import SettingsError


def test_tokens_when_listed_map_each_token_to_its_user() -> None:
    tokens = Tokens.from_env({"BLENDMESH_API_TOKENS": " a=ana , b=ben,"})
    found = [tokens.user(t) for t in ("a", "b", "c", "", "a ")]
    assert found == ["ana", "ben", None, None, None]


def test_tokens_when_file_given_adds_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# people\nc=cy\n\nd = dee\n")
    tokens = Tokens.from_env(
        {"BLENDMESH_API_TOKENS": "a=ana", "BLENDMESH_API_TOKENS_FILE": str(path)}
    )
    assert (len(tokens), tokens.user("c"), tokens.user("d")) == (3, "cy", "dee")


def test_tokens_when_entry_malformed_fails_without_the_secret() -> None:
    with pytest.raises(SettingsError) as caught:
        Tokens.from_env({"BLENDMESH_API_TOKENS": "s3cret-no-user"})
    assert "s3cret" not in str(caught.value)


def test_tokens_when_file_missing_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_API_TOKENS_FILE"):
        Tokens.from_env({"BLENDMESH_API_TOKENS_FILE": str(tmp_path / "none")})


def test_tokens_when_none_configured_accept_nothing() -> None:
    assert Tokens.from_env({}).user("anything") is None
