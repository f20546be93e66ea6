"""The local loop in gateware: cycles of a local update against a full chain update, the
local-loop rate per node, and what the controllers add to each kind of control step.

Run as ``python -m linkdyn.bench.local_loop_gateware [--write-docs docs/performance.md]
[--plot PNG]``.

In the Amaranth simulator, with the robot loaded (UR5 from the built-in table, Panda from its
URDF): :class:`~linkdyn.gateware.chain.LinkDynChain` with ``local_loop=True`` runs chain updates
(CONTROL.start) and local updates (CONTROL.local) on random states, and LATENCY_CYCLES is read
after each; every node's ``tau`` is checked equal to
:class:`~linkdyn.model.local_loop.LocalLoopChain` (the golden model) word for word. Then
:class:`~linkdyn.gateware.controlled_chain.ControlledChain` with ``local_loop=True`` and
LOCAL_MULTIPLE = 2 runs control steps, alternately a chain update's and a local update's, and
CONTROL_LATENCY_CYCLES and LATENCY_CYCLES are read after each (the records checked equal to
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel`). Rates at
:data:`CLOCK_HZ`, the clock of the default build (``make bitstream``: ULX3S, 100 MHz).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import WORD, ControllerConfig
from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.model.local_loop import LocalLoopChain
from linkdyn.model.robot import JointLimits
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from .report import replace_section

__all__ = ["CLOCK_HZ", "ROBOTS", "measure_chain", "measure_controlled", "synthesize_cost",
           "section", "plot", "main"]

#: Clock of the default build (ULX3S, ``make bitstream``), Hz.
CLOCK_HZ = 100_000_000
#: Robots measured: name -> loader.
ROBOTS = ("ur5", "panda")
_CONTROL = P.control_register("CONTROL").address
_STATUS = P.control_register("STATUS").address
_MASK = 0xFFFFFFFF


def _robot(name):
    if name == "ur5":
        return load_robot("ur5")
    if name.startswith("random:"):
        from linkdyn.sim.chain_cases import random_robot
        return random_robot(*(int(x) for x in name.split(":")[1:]))
    from linkdyn.model.reference import load_reference_robot
    return load_reference_robot(name)


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


async def _wait(host, ctx):
    while True:
        _, status = await host.access(ctx, P.CONTROL_NODE, _STATUS)
        if not status & P.STATUS_BUSY:
            return


async def _read(host, ctx, name):
    _, word = await host.access(ctx, P.CONTROL_NODE, P.control_register(name).address)
    return word


def measure_chain(name, updates=3, seed=1):
    """Chain and local updates of ``LinkDynChain(n, local_loop=True)`` with robot ``name``
    (``"ur5"``, ``"panda"``, or ``"random:<n>:<seed>"``).

    Returns
    -------
    dict
        ``n``, ``chain`` and ``local`` (LATENCY_CYCLES of every update), ``matches_golden``
        (every local update's ``tau`` equal to ``LocalLoopChain.local_step``'s).

    Raises
    ------
    AssertionError
        If the bus refuses an access.
    """
    robot = _robot(name)
    n = robot.n
    dut = LinkDynChain(n, local_loop=True)
    spec, host, golden = dut.spec, BusHost(dut), LocalLoopChain(robot)
    rng = np.random.default_rng(seed)
    out = {"robot": robot.name, "n": n, "chain": [], "local": [], "matches_golden": True}

    async def write(ctx, node, addr, word):
        error, _ = await host.access(ctx, node, addr, word)
        assert not error, (node, addr)

    async def state(ctx, values):
        for i in range(n):
            for k, name in enumerate(("q", "qd", "qdd")):
                await write(ctx, i, spec.input_address + k,
                            int(spec.registers.encode(name, values[k][i])) & _MASK)

    async def bench(ctx):
        for i, words in enumerate(encode_robot(robot)):
            for reg, word in words.items():
                await write(ctx, i, spec.registers[reg].address, word)
        for reg, word in encode_base_motion(robot).items():
            await write(ctx, 0, spec.registers[reg].address, word)
        for _ in range(updates):
            values = rng.uniform(-1.5, 1.5, (3, n))
            await state(ctx, values)
            await write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_START)
            await _wait(host, ctx)
            out["chain"].append(await _read(host, ctx, "LATENCY_CYCLES"))
            golden.step(*values)
            values = values + rng.normal(0, [[0.05], [0.3], [3.0]], (3, n))
            await state(ctx, values)
            await write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_LOCAL)
            await _wait(host, ctx)
            out["local"].append(await _read(host, ctx, "LATENCY_CYCLES"))
            tau = [signed_word((await host.access(ctx, i, spec.tau_address))[1])
                   for i in range(n)]
            out["matches_golden"] &= bool(np.array_equal(tau, golden.local_step(*values)))

    _run(dut, bench)
    return out


def measure_controlled(name, steps=4, seed=2):
    """Control steps of ``ControlledChain(n, local_loop=True)`` with LOCAL_MULTIPLE = 2.

    Returns
    -------
    dict
        ``chain_step``, ``local_step`` (CONTROL_LATENCY_CYCLES), ``chain_update``,
        ``local_update`` (LATENCY_CYCLES) of the steps of each kind; ``matches_model``.
    """
    robot = _robot(name)
    n = robot.n
    limits = [link.limits if link.limits.tau_max is not None else
              JointLimits(q_min=-2.0, q_max=2.0, qd_max=3.0, tau_max=50.0)
              for link in robot.links]
    dut = ControlledChain(n, local_loop=True)
    spec, host = dut.spec, BusHost(dut)
    model = ControlledChainModel(spec)
    rng = np.random.default_rng(seed)
    out = {"chain_step": [], "local_step": [], "chain_update": [], "local_update": [],
           "matches_model": True}

    async def write(ctx, node, addr, word):
        error, _ = await host.access(ctx, node, addr, word)
        assert not error and model.write(node, addr, word), (node, addr)

    async def bench(ctx):
        for i, words in enumerate(encode_robot(robot)):
            for reg, word in words.items():
                await write(ctx, i, spec.registers[reg].address, word)
        for reg, word in encode_base_motion(robot).items():
            await write(ctx, 0, spec.registers[reg].address, word)
        for i, lim in enumerate(limits):
            for reg, word in ControllerConfig.for_joint(lim).encode().items():
                await write(ctx, i, P.controller_word(reg).address, word)
        await write(ctx, P.CONTROL_NODE, P.control_register("LOCAL_MULTIPLE").address, 2)
        for step in range(steps):
            for i in range(n):
                q, qd = (int(WORD.encode(v)) for v in rng.uniform(-1, 1, 2))
                ctx.set(dut.sensor[i].q, q)
                ctx.set(dut.sensor[i].qd, qd)
                model.set_sensor(i, q, qd)
                for word in P.REFERENCE_WORDS:
                    await write(ctx, i, word.address, int(WORD.encode(rng.uniform(-1, 1))))
            await write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
            await _wait(host, ctx)
            kind = "local" if step % 2 else "chain"
            out[f"{kind}_step"].append(await _read(host, ctx, "CONTROL_LATENCY_CYCLES"))
            out[f"{kind}_update"].append(await _read(host, ctx, "LATENCY_CYCLES"))
            for i in range(n):
                for word in P.RECORD_WORDS:
                    _, got = await host.access(ctx, i, word.address)
                    out["matches_model"] &= got == model.read(i, word.address)[1] & _MASK

    _run(dut, bench)
    return out


def synthesize_cost():
    """Synthesise one node + joint controller + UART for Spartan-6 (as
    :func:`linkdyn.bench.controlled_chain.synthesize_fit`: ``BoardCore(1, controllers=True)``,
    one-cycle CORDIC steps, Yosys ``synth_xilinx -family xc6s``), without and with the local
    loop.

    Returns
    -------
    dict
        ``"without"``, ``"with"``: ``luts``, ``ffs``, ``dsps``, ``brams``.

    Raises
    ------
    ToolError
        If no Yosys is found or it fails.
    """
    import tempfile

    from amaranth.back import rtlil

    from linkdyn.boards.core import BoardCore
    from linkdyn.boards.toolchain import yosys_utilisation
    from linkdyn.gateware.cordic import STEP_CYCLES

    out = {}
    for label, local_loop in (("without", False), ("with", True)):
        chain = ControlledChain(1, cordic_step_cycles=STEP_CYCLES["xc6s"], local_loop=local_loop)
        core = BoardCore(1, clock_hz=CLOCK_HZ, chain=chain, controllers=True)
        with tempfile.TemporaryDirectory(prefix="linkdyn-local-") as tmp:
            Path(tmp, "top.il").write_text(rtlil.convert(core, name="top"))
            result = yosys_utilisation("xc6s", "top.il", tmp)
        out[label] = {key: result[key] for key in ("luts", "ffs", "dsps", "brams")}
    return out


def _one(values):
    """The cycles of every update of a kind (they do not depend on the data: one value)."""
    values = sorted(set(values))
    return values[0] if len(values) == 1 else f"{values[0]} .. {values[-1]}"


def section(results, cost=None):
    """Return the "## Local loop in gateware" section of docs/performance.md (``cost``:
    :func:`synthesize_cost`)."""
    lines = [
        "## Local loop in gateware",
        "",
        "The paper's third update policy, built with `LinkDynChain(n, local_loop=True)` / "
        "`ControlledChain(n, local_loop=True)` (docs/controller.md, *Local loop*): CONTROL.local "
        "starts a local update, in which every node runs its joint, forward, local and distal "
        "segments at once on its own registers with the mailboxes' words of the last chain "
        "update, waiting for no neighbour and writing no mailbox. Amaranth simulator, the "
        "robot loaded, random states (`python -m linkdyn.bench.local_loop_gateware`); every "
        "local update's `tau` equals `LocalLoopChain.local_step` word for word, every control "
        "step's record `ControlledChainModel`'s. Rates at the default build's clock, "
        f"{CLOCK_HZ / 1e6:g} MHz (ULX3S). A control step with LOCAL_MULTIPLE = m runs one "
        "chain update and m - 1 local updates per chain period.",
        "",
        "| robot | n | chain update [cycles] | local update [cycles] | ratio | chain updates "
        "[kHz] | local updates per node [kHz] | control step, chain [cycles] | control step, "
        "local [cycles] | controller adds (chain / local) | local control steps [kHz] |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        c, k = r["chain"], r["controlled"]
        full, local = max(c["chain"]), max(c["local"])
        step_c, step_l = max(k["chain_step"]), max(k["local_step"])
        added = (step_c - max(k["chain_update"]), step_l - max(k["local_update"]))
        lines.append(
            f"| {c['robot'].upper() if c['robot'] == 'ur5' else c['robot'].capitalize()} | "
            f"{c['n']} | {_one(c['chain'])} | {_one(c['local'])} | "
            f"{full / local:.2f} | {CLOCK_HZ / full / 1e3:,.1f} | "
            f"{CLOCK_HZ / local / 1e3:,.1f} | {_one(k['chain_step'])} | "
            f"{_one(k['local_step'])} | {added[0]} / {added[1]} | "
            f"{CLOCK_HZ / step_l / 1e3:,.1f} |")
    lines += [
        "",
        "A local update is one node's whole microprogram (joint + forward + local + distal, "
        "every node at once): its cycles do not grow with n. A chain update adds the hops (the "
        "forward pass from node 0 to node n-1, the backward pass back). The controller adds "
        "the same to both kinds of step (feedback, the sequencer's `q, qd, qdd` writes and "
        "CONTROL write, the `tau` reads, the last `output`, the records), which at these sizes "
        "is more than the local update itself: the local control step is bounded by the "
        "sequencer's bus traffic, not by the nodes. Cost of the option: the chain's Verilog "
        "without it is unchanged (the default builds, the XC6SLX9 node + controller build "
        "among them, do not grow); with it, per node a gate on the mailbox writes, the "
        "present bits and the two issue conditions, one flip-flop for the chain, and in the "
        "controlled chain LOCAL_MULTIPLE and the phase (two 32-bit registers, an adder, a "
        "comparator).",
        "",
        "![Local loop in gateware: cycles](img/local_loop_gateware.png)",
    ]
    if cost:
        a, b = cost["without"], cost["with"]
        lines += [
            "",
            "One node + joint controller + host UART on the XC6SLX9 (`BoardCore(1, "
            "controllers=True)`, one-cycle CORDIC steps, Yosys `synth_xilinx -family xc6s`; "
            "`python -m linkdyn.bench.local_loop_gateware --synth`):",
            "",
            "| design | LUT6 | FFs | DSP48A1 | BRAM 18 Kb |",
            "|---|---:|---:|---:|---:|",
            f"| without the local loop (the default) | {a['luts']:,} | {a['ffs']:,} | "
            f"{a['dsps']} | {a['brams']:g} |",
            f"| with the local loop | {b['luts']:,} | {b['ffs']:,} | {b['dsps']} | "
            f"{b['brams']:g} |",
            f"| cost | {b['luts'] - a['luts']:+,} | {b['ffs'] - a['ffs']:+,} | "
            f"{b['dsps'] - a['dsps']:+} | {b['brams'] - a['brams']:+g} |",
            "",
            "(With one node there are no mailboxes and no neighbours to wait for: the cost is "
            "the controlled chain's LOCAL_MULTIPLE and phase registers, their adder, comparator "
            "and decoding, and the chain's flag. Every hop of a longer chain adds its gates on "
            "the mailbox writes, the present bits and the two issue conditions. With the "
            "option the board core's protocol engine takes it as well, from the chain: INFO "
            "CONTROLLERS reads 3 and LOCAL_MULTIPLE is in its access check; docs/controller.md, "
            "*The local loop in gateware*. Build a board with it: `python -m "
            "linkdyn.boards.build --board ... --controllers --local-loop`, `make bitstream "
            "BOARD=... CONTROLLERS=1 LOCAL_LOOP=1`; simulate one: `linkdyn sim-board "
            "--controllers --local-loop`.)",
        ]
    return "\n".join(lines) + "\n"


def plot(results, path):
    """Bar chart of the cycles of a chain update, a local update and both control steps."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 3.8))
    labels = ("chain update", "local update", "control step, chain", "control step, local")
    width = 0.8 / len(results)
    for k, r in enumerate(results):
        c, m = r["chain"], r["controlled"]
        values = (max(c["chain"]), max(c["local"]), max(m["chain_step"]), max(m["local_step"]))
        x = np.arange(len(labels)) + (k - (len(results) - 1) / 2) * width
        name = c["robot"].upper() if c["robot"] == "ur5" else c["robot"].capitalize()
        bars = ax.bar(x, values, width, label=f"{name} ({c['n']} nodes)")
        ax.bar_label(bars, fontsize=8)
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set_ylabel(f"cycles ({CLOCK_HZ / 1e6:g} MHz: 100 cycles = 1 us)")
    ax.set_title("Local loop in gateware: a local update against a chain update")
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Command line: simulate, print the section, optionally write it and the plot."""
    parser = argparse.ArgumentParser(prog="python -m linkdyn.bench.local_loop_gateware",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="*", default=list(ROBOTS), help="ur5 and/or panda")
    parser.add_argument("--write-docs", metavar="PATH",
                        help="replace the '## Local loop in gateware' section of this file")
    parser.add_argument("--plot", metavar="PNG", help="also plot the cycles")
    parser.add_argument("--synth", action="store_true",
                        help="also synthesise one node + controller + UART for the XC6SLX9, "
                             "without and with the local loop (needs Yosys)")
    args = parser.parse_args(argv)
    results = []
    for name in args.robots:
        result = {"chain": measure_chain(name), "controlled": measure_controlled(name)}
        print(result, flush=True)
        if not (result["chain"]["matches_golden"] and result["controlled"]["matches_model"]):
            print(f"{name}: the gateware differs from the model", file=sys.stderr)
            return 1
        results.append(result)
    cost = synthesize_cost() if args.synth else None
    if cost:
        print(cost, flush=True)
    text = section(results, cost)
    print(text)
    if args.write_docs:
        replace_section(args.write_docs, text)
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
