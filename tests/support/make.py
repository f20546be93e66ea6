"""What ``make`` would run: the board build's command line of ``make -n bitstream``."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bitstream_command(*variables):
    """Return the ``python -m linkdyn.boards.build ...`` line ``make -n bitstream VARIABLES``
    prints (asserting there is exactly one), for the tests of the Makefile's variables."""
    process = subprocess.run(["make", "-n", "bitstream", *variables], cwd=ROOT,
                             capture_output=True, text=True, check=True)
    lines = [line for line in process.stdout.splitlines() if "linkdyn.boards.build" in line]
    assert len(lines) == 1, lines
    return lines[0]
