"""The home's registry of users and the public keys that sign for them (``users.toml``).

The operator manages it with ``blendmesh users add|list|remove``. The server blendmesh
starts admits each key as a login of its user, the bus door maps a login's subject to its
user, and the policy reads who is an approver (docs/adr/0015), each again whenever the
file changes, so a key added while the mesh runs counts at once. The file is
written owner-only and replaced whole, never half-written.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from contracts import subjects
from contracts.errors import BlendmeshError
from services.runtime.server.identity import IdentityRefused, UserEntry, check_public_key

log = logging.getLogger("blendmesh.security")

FILE_NAME = "users.toml"
MAX_USERS = 10_000
MAX_KEYS = 16  # per user: one per device or program is plenty
MAX_FILE_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9_.@+-]{1,128}$")
_HEADER = (
    "# blendmesh users: the NKeys each user logs in to the bus with (docs/bus.md).\n"
    "# Managed by `blendmesh users add|list|remove`; read again whenever it changes.\n"
)


class UsersFileError(BlendmeshError, ValueError):
    """The registry is malformed, or a change to it is not allowed; the message says why."""


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsersFileError(
            f"user name {name[:80]!r} is not valid: use 1-128 letters, digits or . _ @ + -"
        )
    return name


def parse(text: str, where: str) -> dict[str, UserEntry]:
    """The users of a registry file's text, by name; ``where`` names the file in errors."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsersFileError(f"{where} is not TOML ({exc}); fix or remove it") from None
    table = doc.get("users", {})
    if not isinstance(table, dict):
        raise UsersFileError(f"{where}: 'users' must be a table of users")
    if len(table) > MAX_USERS:
        raise UsersFileError(f"{where} lists {len(table)} users; at most {MAX_USERS}")
    users: dict[str, UserEntry] = {}
    owners: dict[str, str] = {}
    for name, entry in table.items():
        where_user = f"{where}: user {name!r}"
        try:
            check_name(name)
        except UsersFileError as exc:
            raise UsersFileError(f"{where}: {exc}") from None
        keys = entry.get("keys") if isinstance(entry, dict) else None
        approver = entry.get("approver", False) if isinstance(entry, dict) else None
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise UsersFileError(f"{where_user} needs keys = a list of public keys")
        if not 1 <= len(keys) <= MAX_KEYS:
            raise UsersFileError(f"{where_user} has {len(keys)} keys; 1 to {MAX_KEYS}")
        if not isinstance(approver, bool):
            raise UsersFileError(f"{where_user}: approver must be true or false")
        for key in keys:
            try:
                check_public_key(key)
            except IdentityRefused as exc:
                raise UsersFileError(f"{where_user}: {exc}") from None
            if owners.setdefault(key, name) != name:
                raise UsersFileError(f"{where}: key {key} belongs to {owners[key]!r} and {name!r}")
        users[name] = UserEntry(name=name, keys=tuple(keys), approver=approver)
    return users


def render(users: dict[str, UserEntry]) -> str:
    """The file's text: names and keys are checked tokens, so JSON quoting is TOML's."""
    parts = [_HEADER]
    for user in sorted(users.values(), key=lambda u: u.name):
        parts.append(
            f"\n[users.{json.dumps(user.name)}]\n"
            f"keys = [{', '.join(json.dumps(k) for k in user.keys)}]\n"
            f"approver = {'true' if user.approver else 'false'}\n"
        )
    return "".join(parts)


def load(path: Path) -> dict[str, UserEntry]:
    """The registry's users; none when the file does not exist."""
    try:
        with path.open("rb") as src:
            data = src.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsersFileError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsersFileError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise UsersFileError(f"{path} is not UTF-8 text") from None
    return parse(text, str(path))


def save(path: Path, users: dict[str, UserEntry]) -> None:
    """Replace the file whole, owner-only: a reader sees the old registry or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(render(users))
    tmp.replace(path)


def add(path: Path, name: str, key: str, approver: bool | None = None) -> UserEntry:
    """Register ``key`` for ``name`` (a new user, or one more key); ``approver`` None keeps
    an existing user's setting."""
    check_name(name)
    try:
        check_public_key(key)
    except IdentityRefused as exc:
        raise UsersFileError(str(exc)) from None
    users = load(path)
    owner = next((u.name for u in users.values() if key in u.keys), None)
    if owner is not None and owner != name:
        raise UsersFileError(f"key {key} already signs for {owner!r}; remove it there first")
    old = users.get(name)
    if old is None and len(users) >= MAX_USERS:
        raise UsersFileError(f"the registry holds {MAX_USERS} users already; remove one first")
    keys = old.keys if old is not None else ()
    if key not in keys and len(keys) >= MAX_KEYS:
        raise UsersFileError(f"{name!r} has {MAX_KEYS} keys already; remove one first")
    keep = old.approver if old is not None else False
    entry = UserEntry(
        name=name,
        keys=keys if key in keys else (*keys, key),
        approver=keep if approver is None else approver,
    )
    users[name] = entry
    save(path, users)
    return entry


def remove(path: Path, name: str, key: str | None = None) -> None:
    """Remove a user, or only one of their keys (the user goes with their last key)."""
    users = load(path)
    old = users.get(name)
    if old is None:
        raise UsersFileError(f"there is no user {name!r}; `blendmesh users list` lists them")
    if key is not None and key not in old.keys:
        raise UsersFileError(f"{name!r} has no key {key}")
    keys = tuple(k for k in old.keys if k != key) if key is not None else ()
    if keys:
        users[name] = replace(old, keys=keys)
    else:
        del users[name]
    save(path, users)


@dataclass
class UsersFile:
    """The registry as the services see it: read again when the file changes."""

    path: Path
    _stamp: tuple[int, int, int] | None = None
    _users: dict[str, UserEntry] | None = None

    def users(self) -> dict[str, UserEntry]:
        """Every registered user by name. Raises UsersFileError when the file is
        malformed: a broken registry must refuse, never admit, anyone."""
        try:
            st = self.path.stat()
            stamp: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            stamp = None
        if self._users is None or stamp != self._stamp:
            self._users = load(self.path) if stamp is not None else {}
            self._stamp = stamp
        return self._users

    def by_key(self) -> dict[str, UserEntry]:
        """Every registered public key and its user."""
        return {key: user for user in self.users().values() for key in user.keys}

    def approvers(self) -> frozenset[str]:
        """Who besides a run's own user may resolve its approvals. A broken registry
        grants nobody anything (and says why in the log)."""
        try:
            found = self.users()
        except UsersFileError as exc:
            log.error("%s; only a run's own user may resolve its approvals until it is fixed", exc)
            return frozenset()
        return frozenset(name for name, user in found.items() if user.approver)

    def by_token(self, token: str) -> UserEntry | None:
        """The user whose subject token (``subjects.subject_token``) is ``token``."""
        return next(
            (u for u in self.users().values() if subjects.subject_token(u.name) == token), None
        )
