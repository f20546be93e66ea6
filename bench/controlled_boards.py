"""Figures of the joint controllers on the distributed boards: the cycles of a distributed
control step and the utilisation of one board with its controller.

Run as ``python -m linkdyn.bench.controlled_boards [--boards 3] [--synthesize]``. It simulates
:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` (2 bits per cycle: the
DDR link at 100 Mbit/s with a 50 MHz board clock, line delay 3 cycles) in the Amaranth
simulator for n = 1 .. ``boards``: one control step through the register bus (CONTROL.
control_step, STATUS polled until done), and prints CONTROL_LATENCY_CYCLES (the whole step:
FEEDBACK to every board, the update, OUTPUT to every board) beside LATENCY_CYCLES (the update
alone). With ``--synthesize`` it synthesises the core of a middle board (one node, two links,
:class:`~linkdyn.gateware.controlled_actuator.BoardController`) with Yosys for Spartan-6
(:func:`~linkdyn.boards.toolchain.yosys_utilisation`, flattened, as the board builds) and
prints its LUTs, flip-flops, DSPs and block RAMs against the XC6SLX9's.

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
from linkdyn.gateware.actuator import ActuatorCore
from linkdyn.gateware.controlled_actuator import BoardController, ControlledDistributedChain
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.model import protocol as P
from linkdyn.sim.chain_testbench import BusHost

__all__ = ["CLOCK_HZ", "BITS", "measure_step", "synthesize", "main"]

#: Board clock of the figures (2 bits per cycle: 100 Mbit/s per direction).
CLOCK_HZ = 50e6
BITS = 2
#: LUT6 of an XC6SLX9.
XC6SLX9_LUTS = 5720


def measure_step(n, *, bits=BITS):
    """Return ``{"step": CONTROL_LATENCY_CYCLES, "update": LATENCY_CYCLES}`` of a control
    step on ``n`` boards (cycles of the board clock; the second step, the links up)."""
    dut = ControlledDistributedChain(n, bits=bits)
    host = BusHost(dut)
    out = {}

    async def bench(ctx):
        control = P.control_register("CONTROL").address
        # Two steps: the first one's FEEDBACK waits for the links to come up.
        for _ in range(2):
            error, _ = await host.access(ctx, P.CONTROL_NODE, control, P.CONTROL_STEP)
            assert not error
            while True:
                error, status = await host.access(ctx, P.CONTROL_NODE,
                                                  P.control_register("STATUS").address)
                if status & P.STATUS_DONE and not status & P.STATUS_BUSY:
                    break
        for name, key in (("CONTROL_LATENCY_CYCLES", "step"), ("LATENCY_CYCLES", "update")):
            out[key] = (await host.access(ctx, P.CONTROL_NODE,
                                          P.control_register(name).address))[1]

    sim = Simulator(dut)
    sim.add_clock(1 / CLOCK_HZ)
    sim.add_testbench(bench)
    sim.run()
    return out


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
    text = rtlil.convert(core, name="linkdyn_actuator")
    with tempfile.TemporaryDirectory(prefix="linkdyn-synth-") as tmp:
        Path(tmp, "actuator.il").write_text(text)
        return yosys_utilisation(family, "actuator.il", tmp, top="linkdyn_actuator",
                                 flatten=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=3)
    parser.add_argument("--synthesize", action="store_true")
    args = parser.parse_args(argv)
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
