"""The ``blendmesh`` command.

Without NATS_URL every command starts the embedded mesh on ``--home`` (default ./var),
does its job and stops it again; with NATS_URL it joins the mesh that runs there.
"""

# The entry point stays light: it parses, then imports the chosen command's code
# (services.doors.cli.commands), so `--help` and a mistyped argument answer at once.

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from services.doors.cli import args as cli_args


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="blendmesh", description=__doc__)
    p.add_argument("--home", type=Path, help="state directory (default: $BLENDMESH_HOME or ./var)")
    p.add_argument("-v", "--verbose", action="store_true", help="log what the services do")
    sub = p.add_subparsers(dest="command", required=True)
    cli_args.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from services.runtime.service import log_context  # after parsing: `--help` stays quick

    log_context.configure(logging.INFO if args.verbose else logging.ERROR)
    if not args.verbose:
        # nats-py logs its own races as tracebacks (a pong for a flush that was cancelled
        # while a failed start is torn down); what a person needs reaches them as
        # blendmesh's own message. With --verbose they show.
        logging.getLogger("nats").setLevel(logging.CRITICAL)
    from services.doors.cli.commands import execute

    return execute(args)


if __name__ == "__main__":
    sys.exit(main())
