"""The arguments of the commands a studio shares scenes with: change lists and reviews,
locks, and projects (docs/studio.md). Like args.py, argparse alone is imported here."""

from __future__ import annotations

from typing import Any


def changes(verbs: Any) -> None:
    """``scenes diff`` and ``scenes review`` (services/doors/cli/changes.py)."""
    diff = verbs.add_parser("diff", help="what a revision changed: SCENE [A|parent] [B|head]")
    diff.add_argument("scene", help="the scene id")
    diff.add_argument("base", nargs="?", help="the revision to compare with (default: B's parent)")
    diff.add_argument("revision", nargs="?", help="the revision to show (default: the head)")
    diff.add_argument("--json", action="store_true", help="print JSON")
    review = verbs.add_parser("review", help="approve a revision or request changes to it")
    review.add_argument("scene", help="the scene id")
    review.add_argument("revision", help="the revision reviewed (a number, or head)")
    review.add_argument("verdict", choices=("approve", "request-changes"), help="the verdict")
    review.add_argument("--note", default="", help="what the artist should read with it")
    review.add_argument("--json", action="store_true", help="print the recorded review as JSON")
    review.set_defaults(base=None)


def locks(verbs: Any) -> None:
    """``scenes lock|unlock`` (services/doors/cli/projects.py)."""
    lock = verbs.add_parser(
        "lock", help="keep a scene yours: other users' runs on it are refused until it ends"
    )
    lock.add_argument("scene", help="the scene id")
    lock.add_argument(
        "--ttl", type=float, default=3600.0, help="seconds it lasts (default 3600, at most 86400)"
    )
    lock.add_argument("--note", default="", help="why, for whoever finds it locked")
    lock.add_argument(
        "--break",
        dest="breaking",
        action="store_true",
        help="take another user's lock away (a lead of the scene's project)",
    )
    unlock = verbs.add_parser("unlock", help="release your lock on a scene")
    unlock.add_argument("scene", help="the scene id")


def projects(sub: Any) -> None:
    """``projects list|show|create|add-member|remove-member|file`` (cli/projects.py)."""
    projects = sub.add_parser(
        "projects", help="your projects and roles; `projects create|add-member|remove-member|show`"
    )
    projects.add_argument("--json", action="store_true", help="print JSON")
    verbs = projects.add_subparsers(dest="projects_command")
    listed = verbs.add_parser("list", help="the projects you are a member of, and your role")
    listed.add_argument("--json", action="store_true", help="print JSON")
    show = verbs.add_parser("show", help="a project's members, scenes and locks")
    show.add_argument("project", help="the project id")
    show.add_argument("--json", action="store_true", help="print JSON")
    create = verbs.add_parser("create", help="a new project, with you as its lead")
    create.add_argument("project", help="1-64 letters, digits, '_' or '-'")
    add = verbs.add_parser("add-member", help="add a member, or change its role (a lead's)")
    add.add_argument("project", help="the project id")
    add.add_argument("member", help="the user's name")
    add.add_argument("role", choices=("viewer", "artist", "lead", "supervisor"))
    remove = verbs.add_parser("remove-member", help="remove a member (a lead's), or leave")
    remove.add_argument("project", help="the project id")
    remove.add_argument("member", help="the user's name")
    filed = verbs.add_parser("file", help="file a scene of yours in the project")
    filed.add_argument("project", help="the project id")
    filed.add_argument("scene", help="your scene's id")
