"""Figures of the joint controllers on the distributed boards: the cycles of a distributed
control step and the utilisation of one board with its controller.

Run as ``python -m linkdyn.bench.controlled_boards [--boards 3] [--synthesize] [--cut PNG]``.
It simulates
:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` (2 bits per cycle: the
DDR link at 100 Mbit/s with a 50 MHz board clock, line delay 3 cycles) in the Amaranth
simulator for n = 1 .. ``boards``: one control step through the register bus (CONTROL.
control_step, STATUS polled until done), and prints CONTROL_LATENCY_CYCLES (the whole step:
FEEDBACK to every board, the update, OUTPUT to every board) beside LATENCY_CYCLES (the update
alone). With ``--synthesize`` it synthesises the core of a middle board (one node, two links,
:class:`~linkdyn.gateware.controlled_actuator.BoardController`) with Yosys for Spartan-6
(:func:`~linkdyn.boards.toolchain.yosys_utilisation`, flattened, as the board builds) and
prints its LUTs, flip-flops, DSPs and block RAMs against the XC6SLX9's.

With ``--cut``, the safe state behind a cut on 3 boards at the same link rate: the
CONTROL_PERIOD timer on (4/3 of a measured step), hop 1 cut a third of a period into a step,
restored 2.25 periods later, board 2's fault cleared 2 periods after that; it prints the
cycles from the cut to board 2's zero current and writes a plot of every board's current
reference and enable over time.

The step's cycles do not depend on the words (the nodes' and controllers' schedules are fixed),
so the boards run with the power-up constants (zeros).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from amaranth.back import rtlil
from amaranth.sim import Simulator

from linkdyn.boards.toolchain import yosys_utilisation
from linkdyn.gateware.actuator import LINK_WINDOW, ActuatorCore
from linkdyn.gateware.controlled_actuator import BoardController, ControlledDistributedChain
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.model import protocol as P
from linkdyn.model.controller import WORD, ControllerConfig
from linkdyn.sim.chain_testbench import BusHost

from .distributed import board_platform

__all__ = ["CLOCK_HZ", "BITS", "measure_step", "measure_cut", "plot_cut", "synthesize", "main"]

#: Board clock of the figures (2 bits per cycle: 100 Mbit/s per direction).
CLOCK_HZ = 50e6
BITS = 2
#: LUT6 of an XC6SLX9.
XC6SLX9_LUTS = 5720


def measure_step(n, *, bits=BITS):
    """Return ``{"step": CONTROL_LATENCY_CYCLES, "update": LATENCY_CYCLES}`` of a control
    step on ``n`` boards (cycles of the board clock; the second of two steps once the links
    are up)."""
    dut = ControlledDistributedChain(n, bits=bits)
    host = BusHost(dut)
    out = {}

    async def bench(ctx):
        control = P.control_register("CONTROL").address
        # The links up: the last board answers.
        while (await host.access(ctx, n - 1, LINK_WINDOW))[0]:
            pass
        for _ in range(2):
            error, _ = await host.access(ctx, P.CONTROL_NODE, control, P.CONTROL_STEP)
            assert not error
            while True:
                error, status = await host.access(ctx, P.CONTROL_NODE,
                                                  P.control_register("STATUS").address)
                if not status & P.STATUS_BUSY:
                    break
        steps = (await host.access(ctx, P.CONTROL_NODE,
                                   P.control_register("CONTROL_STEPS").address))[1]
        assert steps == 2, f"{steps} of 2 control steps ended"
        for name, key in (("CONTROL_LATENCY_CYCLES", "step"), ("LATENCY_CYCLES", "update")):
            out[key] = (await host.access(ctx, P.CONTROL_NODE,
                                          P.control_register(name).address))[1]

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(bench)
    sim.run()
    return out


def measure_cut(n=3, *, bits=BITS, hop=1, sample=8):
    """Run the cut scenario (module docstring) on ``n`` boards; return ``{"period", "step",
    "cut", "restore", "clear", "safe_at", "trace"}``: cycles, and ``trace`` a list of
    ``(cycle, [(i_ref word, enable) per board])`` every ``sample`` cycles from the period's
    start."""
    dut = ControlledDistributedChain(n, bits=bits, timeout=4096)
    host = BusHost(dut)
    words = {w.name: w.address for w in P.CONTROLLER_WORDS}
    config = ControllerConfig(kp=100.0, kd=10.0, lim_p=50.0, lim_d=50.0, guard_kp=10.0,
                              guard_kv=1.0, guard_small=0.5, guard_large=5.0, q_min=-1.0,
                              q_max=1.0, qd_max=2.0, q_hard_min=-1.5, q_hard_max=1.5,
                              qd_hard_max=3.0, tau_max=200.0, current_per_torque=0.5,
                              watchdog_cycles=0, watchdog_message=True)
    out = {"trace": []}

    async def write(ctx, node, addr, word):
        while (await host.access(ctx, node, addr, word))[0]:
            pass                                   # refused while a step runs: again

    async def read(ctx, name):
        return (await host.access(ctx, P.CONTROL_NODE, P.control_register(name).address,
                                  limit=1 << 20))[1]

    async def run(ctx, cycles, now):
        for _ in range(cycles // sample):
            await ctx.tick().repeat(sample)
            now += sample
            out["trace"].append((now, [(ctx.get(dut.actuator[i].i_ref),
                                        ctx.get(dut.actuator[i].enable)) for i in range(n)]))
        return now

    async def bench(ctx):
        for i in range(n):
            ctx.set(dut.sensor[i].q, int(WORD.encode(1.2)))   # beyond q_max: the guard works
            for name, word in config.encode().items():
                if word:
                    await write(ctx, i, words[name], word)
        await write(ctx, P.CONTROL_NODE, P.control_register("CONTROL").address,
                    P.CONTROL_STEP)
        out["step"] = step = await read(ctx, "CONTROL_LATENCY_CYCLES")
        out["period"] = period = step * 4 // 3
        await write(ctx, P.CONTROL_NODE, P.control_register("CONTROL_PERIOD").address, period)
        now = await run(ctx, period + period // 3, 0)
        out["cut"] = now
        ctx.set(dut.cut, 1 << hop)
        now = await run(ctx, 2 * period + period // 4, now)
        out["restore"] = now
        ctx.set(dut.cut, 0)
        now = await run(ctx, 2 * period, now)
        out["clear"] = now
        await write(ctx, n - 1, words["fault_clear"], 1)
        await run(ctx, 2 * period, now)

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(bench)
    sim.run()
    behind = [(cycle, drives[n - 1]) for cycle, drives in out["trace"] if cycle > out["cut"]]
    out["safe_at"] = next((cycle - out["cut"] for cycle, (i_ref, enable) in behind
                           if not enable and i_ref == 0), None)
    return out


def plot_cut(result, path):
    """Write a PNG of :func:`measure_cut`'s currents and enables over time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cycles = [cycle for cycle, _ in result["trace"]]
    n = len(result["trace"][0][1])
    us = [c / CLOCK_HZ * 1e6 for c in cycles]
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True,
                                         height_ratios=(3, 1))
    for i in range(n):
        current = [WORD.decode(drives[i][0]) for _, drives in result["trace"]]
        enable = [drives[i][1] + 0.05 * i for _, drives in result["trace"]]
        top.plot(us, current, label=f"board {i}", linewidth=1.2)
        bottom.step(us, enable, where="post", linewidth=1.2)
    for name, colour in (("cut", "tab:red"), ("restore", "tab:green"),
                         ("clear", "tab:purple")):
        for axis in (top, bottom):
            axis.axvline(result[name] / CLOCK_HZ * 1e6, color=colour, linestyle="--",
                         linewidth=1, label=name if axis is top else None)
    if result["safe_at"] is not None:
        safe = (result["cut"] + result["safe_at"]) / CLOCK_HZ * 1e6
        top.axvline(safe, color="k", linestyle=":", linewidth=1,
                    label=f"board {n - 1} off, {result['safe_at'] / result['period']:.2f} "
                          f"periods after the cut")
    top.set_ylabel("current reference i_ref [A]")
    bottom.set_ylabel("enable")
    bottom.set_yticks([0, 1])
    bottom.set_xlabel(f"time [us at {CLOCK_HZ / 1e6:g} MHz]")
    top.set_title(f"{n} boards, a control step every {result['period']} cycles: hop 1 cut "
                  f"and restored")
    top.legend(fontsize=7, loc="upper right")
    top.grid(alpha=0.3)
    bottom.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def synthesize(family="xc6s"):
    """Synthesise a middle board's core with its controller with Yosys; return
    :func:`~linkdyn.boards.toolchain.yosys_utilisation`'s dict.

    Raises
    ------
    ToolError
        If Yosys is missing or fails.
    """
    core = ActuatorCore(base=False, last=False, bits=BITS, rx_domain="rx",
                        cordic_step_cycles=STEP_CYCLES[family], node_target=BoardController)
    # Elaborated for the family's board platform, as the board builds are (the ROMs' places
    # follow the platform's family; linkdyn.bench.distributed.synthesize).
    text = rtlil.convert(core, name="linkdyn_actuator", platform=board_platform(family))
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "actuator.il").write_text(text)
        return yosys_utilisation(family, "actuator.il", tmp, top="linkdyn_actuator",
                                 flatten=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--synthesize", action="store_true")
    parser.add_argument("--cut", metavar="PNG", help="run the cut scenario, plot it here")
    args = parser.parse_args(argv)
    if args.cut:
        result = measure_cut()
        plot_cut(result, args.cut)
        print(f"cut: period {result['period']} cycles (step {result['step']}), board 2 off "
              f"{result['safe_at']} cycles after the cut "
              f"({result['safe_at'] / result['period']:.2f} periods, "
              f"{result['safe_at'] / CLOCK_HZ * 1e6:.1f} us)", flush=True)
    for n in range(1, args.boards + 1):
        figures = measure_step(n)
        print(f"{n} board(s): control step {figures['step']} cycles "
              f"({figures['step'] / CLOCK_HZ * 1e6:.1f} us at {CLOCK_HZ / 1e6:.0f} MHz), "
              f"update {figures['update']} cycles", flush=True)
    if args.synthesize:
        result = synthesize("xc6s")
        print(f"middle board with controller, XC6SLX9 (Yosys): {result['luts']} LUT6 "
              f"({100 * result['luts'] / XC6SLX9_LUTS:.0f} %), {result['ffs']} FF, "
              f"{result['dsps']} DSP48A1, {result['brams']} RAMB16", flush=True)


if __name__ == "__main__":
    main()
