"""Signed requests: verifying a signature against the registry, and the registry file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from services.cli import main
from services.runtime import access, users
from services.runtime.identity import (
    SIGNATURE,
    SIGNER,
    IdentityRefused,
    UserEntry,
    may_resolve,
    sign,
    verify,
)
from tests.signing import new_seed, public_key

SUBJECT = "bm.signed.run-1.requested"
BODY = b'{"type":"run.requested"}'


@pytest.fixture
def ana() -> tuple[bytes, dict[str, UserEntry]]:
    seed = new_seed()
    entry = UserEntry(name="ana", keys=(public_key(seed),))
    return seed, {public_key(seed): entry}


def test_verify_when_signed_by_a_registered_key_names_its_user(
    ana: tuple[bytes, dict[str, UserEntry]],
) -> None:
    seed, registry = ana
    assert verify(registry, SUBJECT, BODY, sign(seed, SUBJECT, BODY)).name == "ana"


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda h: {}, "not signed"),
        (lambda h: {SIGNER: h[SIGNER]}, "not signed"),
        (lambda h: {**h, SIGNER: "ana"}, "is not a user public key"),
        (lambda h: {**h, SIGNER: "U" + "1" * 55}, "is not base32"),
        (
            lambda h: {**h, SIGNER: h[SIGNER][:-1] + ("A" if h[SIGNER][-1] != "A" else "B")},
            "checksum",
        ),
        (lambda h: {**h, SIGNATURE: "%%%"}, "not base64url"),
        (lambda h: {**h, SIGNATURE: "AAAA"}, "holds 3 bytes"),
        (lambda h: {**h, SIGNATURE: "A" * 200}, "longer than"),
    ],
)
def test_verify_when_headers_are_wrong_says_what(
    ana: tuple[bytes, dict[str, UserEntry]], change: object, says: str
) -> None:
    seed, registry = ana
    headers = change(sign(seed, SUBJECT, BODY))  # type: ignore[operator]
    with pytest.raises(IdentityRefused, match=says):
        verify(registry, SUBJECT, BODY, headers)


def test_verify_when_key_is_unknown_says_how_to_register_it(
    ana: tuple[bytes, dict[str, UserEntry]],
) -> None:
    _, registry = ana
    stranger = new_seed()
    with pytest.raises(IdentityRefused, match="blendmesh users add NAME --key U"):
        verify(registry, SUBJECT, BODY, sign(stranger, SUBJECT, BODY))


@pytest.mark.parametrize(
    ("subject", "body"),
    [(SUBJECT, BODY + b" "), ("bm.signed.run-2.requested", BODY)],
    ids=["tampered body", "another subject"],
)
def test_verify_when_bytes_differ_from_what_was_signed_refuses(
    ana: tuple[bytes, dict[str, UserEntry]], subject: str, body: bytes
) -> None:
    seed, registry = ana
    with pytest.raises(IdentityRefused, match="does not match this message"):
        verify(registry, subject, body, sign(seed, SUBJECT, BODY))


def test_may_resolve_when_own_run_or_approver_allows_else_refuses() -> None:
    ana = UserEntry(name="ana", keys=())
    carol = UserEntry(name="carol", keys=(), approver=True)
    assert may_resolve(ana, "ana") and may_resolve(carol, "ana")
    assert not may_resolve(ana, "ben")


def test_registry_when_added_to_is_owner_only_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    key, other = public_key(new_seed()), public_key(new_seed())
    users.add(path, "ana", key)
    users.add(path, "ana", other, approver=True)
    users.add(path, "ana", other)  # again: nothing new, approver kept
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert users.load(path) == {"ana": UserEntry(name="ana", keys=(key, other), approver=True)}
    users.remove(path, "ana", key)
    assert users.load(path)["ana"].keys == (other,)
    users.remove(path, "ana", other)  # the last key: the user goes too
    assert users.load(path) == {}


def test_registry_when_a_key_is_another_users_refuses(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    key = public_key(new_seed())
    users.add(path, "ana", key)
    with pytest.raises(users.UsersFileError, match="already signs for 'ana'"):
        users.add(path, "ben", key)


def test_registry_when_full_refuses_another_key(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    for _ in range(users.MAX_KEYS):
        users.add(path, "ana", public_key(new_seed()))
    with pytest.raises(users.UsersFileError, match=f"has {users.MAX_KEYS} keys already"):
        users.add(path, "ana", public_key(new_seed()))


@pytest.mark.parametrize(
    ("name", "key", "says"),
    [("ana ben", None, "is not valid"), ("ana", "Ubad", "is not a user public key")],
)
def test_registry_when_name_or_key_is_malformed_refuses(
    tmp_path: Path, name: str, key: str | None, says: str
) -> None:
    with pytest.raises(users.UsersFileError, match=says):
        users.add(tmp_path / users.FILE_NAME, name, key or public_key(new_seed()))
    assert not (tmp_path / users.FILE_NAME).exists()  # nothing half-written


def test_registry_when_removing_what_is_not_there_says_so(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    with pytest.raises(users.UsersFileError, match="there is no user 'ana'"):
        users.remove(path, "ana")
    users.add(path, "ana", public_key(new_seed()))
    with pytest.raises(users.UsersFileError, match="has no key"):
        users.remove(path, "ana", public_key(new_seed()))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("users = [", "is not TOML"),
        ("users = 1", "must be a table"),
        ('[users.ana]\nkeys = "U"', "needs keys"),
        ("[users.ana]\nkeys = []", "0 keys"),
        ('[users.ana]\nkeys = ["Ux"]', "is not a user public key"),
        ('[users."a b"]\nkeys = []', "is not valid"),
        ("[users.ana]\nkeys = [{k}]\napprover = 1", "approver must be true or false"),
        ("[users.ana]\nkeys = [{k}]\n[users.ben]\nkeys = [{k}]", "belongs to 'ana' and 'ben'"),
    ],
)
def test_registry_when_file_is_malformed_names_the_problem(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / users.FILE_NAME
    path.write_text(text.replace("{k}", f'"{public_key(new_seed())}"'))
    with pytest.raises(users.UsersFileError, match=says):
        users.load(path)
    with pytest.raises(users.UsersFileError, match=says):
        users.UsersFile(path).by_key()


def test_registry_when_file_is_too_large_or_not_text_refuses(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    path.write_bytes(b"#" * (users.MAX_FILE_BYTES + 1))
    with pytest.raises(users.UsersFileError, match="larger than"):
        users.load(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(users.UsersFileError, match="not UTF-8"):
        users.load(path)


def test_users_file_when_changed_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    seen = users.UsersFile(path)
    assert seen.by_key() == {}  # no file: nobody may sign
    key = public_key(new_seed())
    users.add(path, "ana", key)
    assert seen.by_key()[key].name == "ana"
    users.remove(path, "ana")
    assert seen.by_key() == {}


def test_users_command_when_used_adds_lists_and_removes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = public_key(new_seed())
    home = ["--home", str(tmp_path)]
    assert main([*home, "users", "add", "carol", "--key", key, "--approver"]) == 0
    assert main([*home, "users", "list"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["carol", "approver", key] in rows
    assert main([*home, "users", "list", "--json"]) == 0
    assert '"approver": true' in capsys.readouterr().out
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) == 0o700
    assert main([*home, "users", "remove", "carol"]) == 0
    assert main([*home, "users", "remove", "carol"]) == 2
    assert "there is no user 'carol'" in capsys.readouterr().err
    assert main([*home, "users", "add", "ana", "--key", "nope"]) == 2
    assert "is not a user public key" in capsys.readouterr().err


def test_credentials_when_from_before_the_external_role_get_its_password(tmp_path: Path) -> None:
    path = tmp_path / "nats-credentials.json"
    old = {role: f"pw-{role}" for role in access.ROLES if role != access.EXTERNAL}
    path.write_text(json.dumps({"version": 1, "users": old}))
    with pytest.raises(access.CredentialsError, match="no password for external"):
        access.login_for(path, access.EXTERNAL)
    passwords = access.load_or_create(path)  # as the mesh does when it starts
    assert {r: passwords[r] for r in old} == old  # the services' logins still work
    assert passwords[access.EXTERNAL] not in old.values()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    login = access.login_for(path, access.EXTERNAL)
    assert login is not None and login.password == passwords[access.EXTERNAL]
