"""The ``linkdyn`` command line: one subcommand per host feature.

Every feature module listed in :data:`COMMAND_MODULES` provides ``register(subparsers)``, which
adds its subcommands with ``set_defaults(func=...)``; ``func(args)`` returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: Modules that register subcommands, in help order.
COMMAND_MODULES = (
    "linkdyn.host.identification.cli",
    "linkdyn.host.trajectory.cli",
    "linkdyn.host.board_cli",
    "linkdyn.host.control_cli",
    "linkdyn.host.experiments.cli",
    "linkdyn.host.certify_cli",
)


class CommandError(Exception):
    """A user error: printed as ``linkdyn: error: ...`` with exit status 2, no traceback."""


def build_parser():
    """Return the ``linkdyn`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="linkdyn",
        description="LinkDyn: distributed inverse dynamics in FPGA gateware (host tools).")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv=None):
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except CommandError as error:
        print(f"linkdyn: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("linkdyn: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of the output went away (`linkdyn status | head -1`): stop quietly, as
        # Unix tools do, and keep Python from reporting the pipe again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13                                    # killed by SIGPIPE


if __name__ == "__main__":
    # Run the imported module's main, not this __main__ copy: the subcommands raise the
    # CommandError of linkdyn.host.cli, which a second copy of the module would not catch.
    from linkdyn.host import cli as _cli
    sys.exit(_cli.main())
