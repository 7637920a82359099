"""``blendmesh users``: who may sign requests on the bus, and with which keys.

The registry is a file in the home (``users.toml``, owner-only); the planner and the
policy read it again whenever it changes, so no restart is needed (docs/bus.md §9).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import msgspec
from rich.console import Console

from services.runtime.home import private_home
from services.runtime.settings import Settings
from services.runtime.users import FILE_NAME, UsersFileError, add, load, remove


def add_parsers(sub: Any) -> None:
    users = sub.add_parser("users", help="who may sign bus requests: `users add|list|remove`")
    verbs = users.add_subparsers(dest="users_command", required=True)
    adding = verbs.add_parser("add", help="register a user's public NKey (U...)")
    adding.add_argument("name", help="the user the key signs for")
    adding.add_argument("--key", required=True, help="the public user key, 'U' and 55 more")
    role = adding.add_mutually_exclusive_group()
    role.add_argument(
        "--approver", action="store_true", default=None, help="may resolve others' approvals"
    )
    role.add_argument(
        "--no-approver",
        dest="approver",
        action="store_false",
        default=None,
        help="only their own runs'",
    )
    listing = verbs.add_parser("list", help="the registered users and their keys")
    listing.add_argument("--json", action="store_true", help="print JSON")
    removing = verbs.add_parser("remove", help="remove a user, or one of their keys")
    removing.add_argument("name", help="the user")
    removing.add_argument("--key", help="remove only this key")


def dispatch(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    """Run a ``users`` command. Raises ``ValueError`` (``UsersFileError``) with what to fix."""
    path = settings.home / FILE_NAME
    if args.users_command in ("add", "remove"):
        private_home(settings.home)  # the registry is the mesh's to trust: owner-only
    match args.users_command:
        case "add":
            entry = add(path, args.name, args.key, args.approver)
            role = " (approver)" if entry.approver else ""
            out.print(f"{entry.name}{role}: {len(entry.keys)} key(s)", highlight=False)
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
