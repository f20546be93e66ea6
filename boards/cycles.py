"""Update latency and interval of a chain: from its own cycle counters in simulation, or from
the microprogram's schedule when the build's chain is the stand-in.

:func:`simulate_update_cycles` drives a chain through its register bus in the Amaranth
simulator, as the host link does: it writes CONTROL.start, polls STATUS until the update is
done, starts the next update at once (retrying while the chain refuses), and reads the chain's
LATENCY_CYCLES and INTERVAL_CYCLES (``docs/protocol.md``). It works for any chain that
implements the protocol's control block: the real :class:`~linkdyn.gateware.chain.LinkDynChain`
or :class:`~linkdyn.gateware.fake_chain.FakeChain`.

:func:`schedule_update_cycles` is the estimate of the microprogram's schedule report
(:meth:`linkdyn.model.microprogram.Microprogram.schedule_report`).
"""

from amaranth.sim import Simulator

from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import microprogram
from linkdyn.model.protocol import (
    CONTROL_NODE, CONTROL_START, STATUS_BUSY, STATUS_DONE, control_register,
)

__all__ = ["simulate_update_cycles", "schedule_update_cycles"]


class _Budget:
    """Counts simulated cycles and stops a run that exceeds its budget."""

    def __init__(self, cycles):
        self.left = cycles

    def spend(self):
        self.left -= 1
        if self.left < 0:
            raise RuntimeError("the chain did not finish its updates within the cycle budget")


async def _access(ctx, bus, node, addr, budget, *, write=None):
    """One register-bus transaction; return ``(error, rdata)``."""
    ctx.set(bus.valid, 1)
    ctx.set(bus.node, node)
    ctx.set(bus.addr, addr)
    ctx.set(bus.we, write is not None)
    ctx.set(bus.wdata, write or 0)
    while True:
        _, _, ready, error, rdata = await ctx.tick().sample(bus.ready, bus.error, bus.rdata)
        budget.spend()
        if ready:
            break
    ctx.set(bus.valid, 0)
    return error, rdata


def simulate_update_cycles(chain, *, updates=2, max_cycles=200_000):
    """Run back-to-back updates of a chain and return its cycle counters.

    Parameters
    ----------
    chain : wiring.Component
        A register-bus target with the protocol's control block (``bus`` member). All node
        registers are left at their reset value (zero state; the cycle counts of the node
        microprogram do not depend on the data).
    updates : int
        Updates to run back to back (at least 2, so that an interval exists).
    max_cycles : int
        Simulation budget, cycles; exceeded means the chain never finished.

    Returns
    -------
    dict
        ``{"update_latency_cycles": LATENCY_CYCLES, "update_interval_cycles":
        INTERVAL_CYCLES, "update_count": UPDATE_COUNT}`` after the last update. The interval
        is the shortest start-to-start distance the chain accepts through its register bus
        (the start of the next update is written as soon as STATUS reads done or, if the
        chain takes starts while busy, as soon as it accepts one).

    Raises
    ------
    ValueError
        If ``updates`` is below 2.
    RuntimeError
        If the chain did not finish within ``max_cycles`` or refused a read.
    """
    if not isinstance(updates, int) or updates < 2:
        raise ValueError(f"Updates must be an integer of at least 2, not {updates!r}")
    bus = chain.bus
    control = control_register("CONTROL").address
    status = control_register("STATUS").address
    names = ("LATENCY_CYCLES", "INTERVAL_CYCLES", "UPDATE_COUNT")
    result = {}
    budget = _Budget(max_cycles)

    async def testbench(ctx):
        await ctx.tick().repeat(2)
        for _ in range(updates):
            while True:
                error, _ = await _access(ctx, bus, CONTROL_NODE, control, budget,
                                          write=CONTROL_START)
                if not error:
                    break
            while True:
                error, word = await _access(ctx, bus, CONTROL_NODE, status, budget)
                if error:
                    raise RuntimeError("the chain refused a STATUS read")
                if word & STATUS_DONE and not word & STATUS_BUSY:
                    break
        for name in names:
            error, word = await _access(ctx, bus, CONTROL_NODE,
                                        control_register(name).address, budget)
            if error:
                raise RuntimeError(f"the chain refused a {name} read")
            result[name] = int(word)

    simulator = Simulator(chain)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()
    return {"update_latency_cycles": result["LATENCY_CYCLES"],
            "update_interval_cycles": result["INTERVAL_CYCLES"],
            "update_count": result["UPDATE_COUNT"]}


def schedule_update_cycles(nodes, fmt=Q15_16):
    """Return the schedule's estimate of one sequential chain update.

    Parameters
    ----------
    nodes : int
        Number of nodes n.
    fmt : QFormat
        Word format of the microprogram.

    Returns
    -------
    dict
        ``{"update_latency_cycles": joint + n forward + local + n distal,
        "update_interval_cycles": the same (sequential policy: the next update starts when
        the last ends)}``; no mailbox handover and no register-bus cost are counted.
    """
    segments = microprogram(fmt).segments
    latency = (segments["joint"].cycles + nodes * segments["forward"].cycles
               + segments["local"].cycles + nodes * segments["distal"].cycles)
    return {"update_latency_cycles": latency, "update_interval_cycles": latency}
