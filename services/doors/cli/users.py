"""``blendmesh users``: who may log in to the bus as themselves, and with which keys.

The registry is a file in the home (``users.toml``, owner-only). The server blendmesh
starts reloads its logins whenever the file changes, so no restart is needed
(docs/bus.md §4). ``users login`` writes what one user needs to connect, and nothing of
anyone else's; ``users add --new-key`` makes that user a key and writes its seed there.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import msgspec
import nkeys
from rich.console import Console

from contracts.door import run_prefix
from contracts.subjects import subject_token
from services.runtime.nats import access
from services.runtime.server.users import FILE_NAME, UsersFileError, add, load, remove
from services.runtime.service.home import private_home
from services.runtime.service.settings import Settings


def dispatch(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    """Run a ``users`` command. Raises ``ValueError`` (``UsersFileError``) with what to fix."""
    path = settings.home / FILE_NAME
    if args.users_command in ("add", "remove"):
        private_home(settings.home)  # the registry is the mesh's to trust: owner-only
    match args.users_command:
        case "add" if args.new_key is not None:
            seed = new_seed()
            target: Path = args.new_key
            # The seed is written before the key counts, so no key is ever registered
            # whose seed nobody has; a refused registration takes its file back.
            write_private(target, login_document(settings, args.name, seed.decode()))
            try:
                entry = add(path, args.name, public_key(seed), args.approver)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
            out.print(
                f"{entry.name}: new key {public_key(seed)}; its login is in {target} "
                "(hand it to the user alone: it holds their secret seed)",
                highlight=False,
            )
        case "add":
            entry = add(path, args.name, args.key, args.approver)
            role = " (approver)" if entry.approver else ""
            out.print(f"{entry.name}{role}: {len(entry.keys)} key(s)", highlight=False)
        case "login":
            if args.name not in load(path):
                raise UsersFileError(
                    f"there is no user {args.name!r}; `blendmesh users add` registers one"
                )
            doc = login_document(settings, args.name)
            if args.output is None:
                out.print_json(json.dumps(doc))
            else:
                write_private(args.output, doc)
                out.print(f"wrote {args.name}'s login to {args.output}", highlight=False)
        case "remove":
            remove(path, args.name, args.key)
            out.print(f"removed {args.key or args.name}", highlight=False)
        case "list":
            users = sorted(load(path).values(), key=lambda u: u.name)
            if args.json:
                out.print_json(json.dumps(msgspec.to_builtins(users)))
                return 0
            for user in users:
                role = "approver" if user.approver else "user"
                out.print(f"{user.name}  {role}  {' '.join(user.keys)}", highlight=False)
        case other:
            raise UsersFileError(f"unknown users command {other!r}")
    return 0


def new_seed() -> bytes:
    """A fresh user NKey seed (``SU...``), from the OS's randomness."""
    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))


def public_key(seed: bytes) -> str:
    pair = nkeys.from_seed(bytearray(seed))
    try:
        return str(pair.public_key.decode())
    finally:
        pair.wipe()


def login_document(settings: Settings, name: str, seed: str | None = None) -> dict[str, Any]:
    """What a program needs to log in as ``name`` and ask the bus door (docs/bus.md §4):
    where the mesh is, its prefix, the user's subject token and inbox, and the seed when
    one was just made. Nothing in it is anyone else's."""
    doc: dict[str, Any] = {
        "version": 1,
        "url": settings.nats_url or _running_url(settings.home),
        "prefix": settings.prefix,
        "user": name,
        "subject_user": subject_token(name),
        "run_prefix": run_prefix(name),
        "inbox_prefix": access.user_inbox_prefix(name),
    }
    if seed is not None:
        doc["seed"] = seed
    return doc


def _running_url(home: Path) -> str:
    """The URL of the mesh running on ``home`` (``blendmesh up``), or "" when none is."""
    try:
        found = json.loads((home / "mesh.json").read_text()).get("url", "")
    except (OSError, ValueError, AttributeError):
        return ""
    return found if isinstance(found, str) else ""


def write_private(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` owner-only, refusing to follow or replace what is there."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise UsersFileError(f"{path} exists; give a new file") from None
    except OSError as exc:
        raise UsersFileError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as out:
        json.dump(doc, out, indent=2)
        out.write("\n")
