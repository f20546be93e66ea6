"""Load a built bitstream into a board with openFPGALoader.

Run as ``python -m linkdyn.boards.program --board ulx3s [--bitstream build/ulx3s/top.bit]
[--flash]``. The open boards (ULX3S) are programmed through openFPGALoader (Debian package
``openfpgaloader``; ``OPENFPGALOADER`` may name another binary): first ``--detect`` checks
that a board is attached, then the bitstream goes into SRAM (lost at power-off) or, with
``--flash``, into the configuration flash. The Spartan-6 boards are not programmed here: their
bitstream needs ISE, and each has its own loader (see :data:`SPARTAN6_HINTS`).

Exit status:

====  ===================================================================================
0     programmed
2     bad arguments (unknown board)
3     the board is not programmed by this tool (Spartan-6 boards; the message says how)
4     openFPGALoader not found
5     no bitstream (build it first: ``python -m linkdyn.boards.build --board <board>``)
6     no board attached (openFPGALoader found no cable or no FPGA)
7     openFPGALoader failed while programming
====  ===================================================================================
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

from . import BOARDS
from .toolchain import find_tool

__all__ = ["program", "ProgramError", "OPENFPGALOADER_BOARDS", "SPARTAN6_HINTS", "main"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NOT_SUPPORTED = 3
EXIT_NO_TOOL = 4
EXIT_NO_BITSTREAM = 5
EXIT_NO_BOARD = 6
EXIT_PROGRAM_FAILED = 7

#: Board name -> openFPGALoader's ``-b`` name.
OPENFPGALOADER_BOARDS = {"ulx3s": "ulx3s"}

#: How the Spartan-6 boards are loaded (their bitstream needs ISE 14.7 first).
SPARTAN6_HINTS = {
    "atlys": "Digilent Adept (djtgcfg prog -d Atlys -i 0 -f top.bit) or ISE iMPACT",
    "mimas": "Numato's Mimas configuration tool over its USB port (the .bin file ISE's "
             "bitgen writes beside top.bit)",
    "sk_xc6slx9": "an external JTAG cable on its JTAG header (e.g. openFPGALoader -c "
                  "<cable> top.bit, or ISE iMPACT)",
}


class ProgramError(Exception):
    """Programming did not happen; ``exit_status`` is the module's documented status."""

    def __init__(self, message, exit_status):
        super().__init__(message)
        self.exit_status = exit_status


def program(name, bitstream=None, *, flash=False, progress=print):
    """Program a board with a bitstream.

    Parameters
    ----------
    name : str
        Board, a key of :data:`linkdyn.boards.BOARDS`.
    bitstream : path-like, optional
        Bitstream file (default ``build/<board>/top.bit``).
    flash : bool
        Write the configuration flash instead of the SRAM.
    progress : callable
        Called with one line of text per step.

    Raises
    ------
    ValueError
        If the board is unknown.
    ProgramError
        If the board cannot be programmed here, the tool or bitstream is missing, no board
        is attached or programming fails (``exit_status`` as in the module's table).
    """
    if name not in BOARDS:
        raise ValueError(f"Board must be one of {', '.join(BOARDS)}, not {name!r}")
    if name not in OPENFPGALOADER_BOARDS:
        raise ProgramError(f"{BOARDS[name].title} is not programmed by this tool: build its "
                           f"bitstream with ISE 14.7, then load it with "
                           f"{SPARTAN6_HINTS[name]}", EXIT_NOT_SUPPORTED)
    loader = find_tool("openFPGALoader")
    if loader is None:
        raise ProgramError("openFPGALoader not found: install it (Debian/Ubuntu: apt-get "
                           "install openfpgaloader) or name it in $OPENFPGALOADER",
                           EXIT_NO_TOOL)
    bitstream = Path(bitstream if bitstream is not None else Path("build") / name / "top.bit")
    if not bitstream.is_file():
        raise ProgramError(f"no bitstream at {bitstream}: build it first with "
                           f"'python -m linkdyn.boards.build --board {name}'", EXIT_NO_BITSTREAM)
    report = bitstream.with_name("report.json")
    if report.is_file():
        status = json.loads(report.read_text()).get("status")
        if status == "timing-failed":
            progress(f"warning: {report} says this build did not meet timing")
    target = ["-b", OPENFPGALOADER_BOARDS[name]]
    progress(f"looking for a {BOARDS[name].title}: {' '.join([*loader, *target, '--detect'])}")
    detect = subprocess.run([*loader, *target, "--detect"], capture_output=True, text=True)
    if detect.returncode != 0:
        output = (detect.stdout + detect.stderr).strip()
        raise ProgramError(f"no {BOARDS[name].title} attached (openFPGALoader --detect "
                           f"failed: {output.splitlines()[-1] if output else 'no output'}); "
                           "connect the board's USB port (US1) and check the udev "
                           "permissions", EXIT_NO_BOARD)
    command = [*loader, *target, "-f" if flash else "-m", str(bitstream)]
    progress(f"programming {'flash' if flash else 'SRAM'}: {' '.join(command)}")
    result = subprocess.run(command)
    if result.returncode != 0:
        raise ProgramError(f"openFPGALoader failed (status {result.returncode})",
                           EXIT_PROGRAM_FAILED)
    progress("done")


def main(argv=None):
    """Command line; returns the exit status of the module's table."""
    parser = argparse.ArgumentParser(
        prog="python -m linkdyn.boards.program", description=__doc__.splitlines()[0],
        epilog="Exit status: 0 programmed, 2 bad arguments, 3 board not programmed by this "
               "tool, 4 openFPGALoader missing, 5 no bitstream, 6 no board attached, "
               "7 programming failed.")
    parser.add_argument("--board", default="ulx3s", choices=list(BOARDS),
                        help="board (default ulx3s)")
    parser.add_argument("--bitstream", help="bitstream (default build/<board>/top.bit)")
    parser.add_argument("--flash", action="store_true",
                        help="write the configuration flash (default: SRAM, lost at power-off)")
    args = parser.parse_args(argv)
    try:
        program(args.board, args.bitstream, flash=args.flash)
    except ProgramError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_status
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
