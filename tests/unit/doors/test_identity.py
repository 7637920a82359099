"""Who a user is on the bus: their public keys, the registry file, and the login files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from contracts.door import run_prefix
from contracts.subjects import subject_token
from services.doors.cli.main import main
from services.runtime.nats import access
from services.runtime.server import users
from services.runtime.server.identity import (
    IdentityRefused,
    UserEntry,
    check_public_key,
    may_resolve,
)
from tests.support.signing import new_seed, public_key


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("ana", "is not a user public key"),
        ("U" + "1" * 55, "is not base32"),
        ("S" + "A" * 55, "is not a user public key"),
    ],
)
def test_public_key_when_malformed_says_what(key: str, problem: str) -> None:
    with pytest.raises(IdentityRefused, match=problem):
        check_public_key(key)


def test_public_key_when_checksum_is_wrong_refuses() -> None:
    key = public_key(new_seed())
    broken = key[:-1] + ("A" if key[-1] != "A" else "B")
    with pytest.raises(IdentityRefused, match="checksum"):
        check_public_key(broken)


def test_may_resolve_when_own_run_or_approver_allows_else_refuses() -> None:
    approvers = frozenset({"carol"})
    assert may_resolve("ana", "ana", approvers) and may_resolve("carol", "ana", approvers)
    assert not may_resolve("ana", "ben", approvers)
    assert not may_resolve("ben", "ana", frozenset())


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
    assert seen.by_key() == {}  # no file: nobody may log in
    key = public_key(new_seed())
    users.add(path, "ana", key)
    users.add(path, "ana.b@x", public_key(new_seed()), approver=True)
    assert seen.by_key()[key].name == "ana"
    assert seen.approvers() == {"ana.b@x"}
    by_token = seen.by_token(subject_token("ana.b@x"))
    assert by_token is not None and by_token.name == "ana.b@x"
    assert seen.by_token("ana.b@x") is None  # a name that is no token is found by its hash
    users.remove(path, "ana")
    assert seen.by_key() != {} and seen.by_token("ana") is None


def test_users_file_when_malformed_grants_no_approver(tmp_path: Path) -> None:
    path = tmp_path / users.FILE_NAME
    users.add(path, "carol", public_key(new_seed()), approver=True)
    seen = users.UsersFile(path)
    assert seen.approvers() == {"carol"}
    path.write_text("users = 3")
    assert seen.approvers() == frozenset()


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


def test_credentials_when_from_before_the_door_role_drop_external_and_add_door(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nats-credentials.json"
    old = {role: f"pw-{role}" for role in access.ROLES if role != access.DOOR}
    path.write_text(json.dumps({"version": 1, "users": {**old, "external": "pw-external"}}))
    with pytest.raises(access.CredentialsError, match="no password for door"):
        access.login_for(path, access.DOOR)
    passwords = access.load_or_create(path)  # as the mesh does when it starts
    assert {r: passwords[r] for r in old} == old  # the services' logins still work
    assert passwords[access.DOOR] not in old.values()
    assert "external" not in json.loads(path.read_text())["users"]  # the shared login is gone
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    names = [u.get("user") for u in access.authorization(passwords, "bm")["users"]]
    assert "external" not in names


def test_users_login_command_when_a_key_is_made_writes_only_that_users_login(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(tmp_path / "home")]
    other = public_key(new_seed())
    assert main([*home, "users", "add", "ben", "--key", other]) == 0
    login = tmp_path / "ana.json"
    assert main([*home, "users", "add", "ana", "--new-key", str(login)]) == 0
    doc = json.loads(login.read_text())
    assert stat.S_IMODE(login.stat().st_mode) == 0o600
    assert doc["user"] == "ana" and doc["inbox_prefix"] == "_INBOX.u.ana"
    assert doc["run_prefix"] == run_prefix("ana")
    assert doc["seed"].startswith("SU") and other not in login.read_text()
    registered = users.load(tmp_path / "home" / users.FILE_NAME)["ana"].keys
    assert registered == (public_key(doc["seed"].encode()),)
    capsys.readouterr()
    assert main([*home, "users", "login", "ben"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["user"] == "ben" and "seed" not in shown


def test_users_login_command_when_refused_leaves_no_key_and_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(tmp_path / "home")]
    login = tmp_path / "bad.json"
    assert main([*home, "users", "add", "bad name", "--new-key", str(login)]) != 0
    assert not login.exists()
    assert users.load(tmp_path / "home" / users.FILE_NAME) == {}
    login.write_text("keep me")
    assert main([*home, "users", "add", "ana", "--new-key", str(login)]) != 0
    assert login.read_text() == "keep me"  # never overwritten
    assert main([*home, "users", "login", "nobody"]) != 0
    assert "no user 'nobody'" in capsys.readouterr().err
