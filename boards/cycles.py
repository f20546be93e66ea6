"""Update latency and interval of a chain: from its own cycle counters in simulation, or from
the microprogram's schedule when the build's chain is the stand-in.

:func:`simulate_update_cycles` drives a chain through its register bus in the Amaranth
simulator, as the host link does: one update alone (CONTROL.start, STATUS polled until done,
LATENCY_CYCLES read), then updates back to back (each start written again at once while the
chain refuses it), then INTERVAL_CYCLES (``docs/protocol.md``). It works for any chain that
implements the protocol's control block: the real :class:`~linkdyn.gateware.chain.LinkDynChain`
or :class:`~linkdyn.gateware.fake_chain.FakeChain`.

:func:`schedule_update_cycles` is the estimate of the microprogram's schedule report
(:meth:`linkdyn.model.microprogram.Microprogram.schedule_report`).
"""

from amaranth.sim import Simulator

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


def simulate_update_cycles(chain, *, updates=4, max_cycles=200_000):
    """Run one update alone, then updates back to back, and return the chain's counters.

    Parameters
    ----------
    chain : wiring.Component
        A register-bus target with the protocol's control block (``bus`` member). All node
        registers are left at their reset value (zero state; the cycle counts of the node
        microprogram do not depend on the data).
    updates : int
        Updates in all (at least 3): the first alone, the others back to back.
    max_cycles : int
        Simulation budget, cycles; exceeded means the chain never finished.

    Returns
    -------
    dict
        ``{"update_latency_cycles": LATENCY_CYCLES after the first update (alone, nothing
        queued), "update_interval_cycles": INTERVAL_CYCLES after the last (the start-to-start
        distance of back-to-back updates: every start is written again at once while the chain
        refuses it, so a pipelined chain's overlap shows), "update_count": UPDATE_COUNT}``.

    Raises
    ------
    ValueError
        If ``updates`` is below 3.
    RuntimeError
        If the chain did not finish within ``max_cycles`` or refused a read.
    """
    if not isinstance(updates, int) or updates < 3:
        raise ValueError(f"Updates must be an integer of at least 3, not {updates!r}")
    bus = chain.bus
    control = control_register("CONTROL").address
    status = control_register("STATUS").address
    result = {}
    budget = _Budget(max_cycles)

    async def read(ctx, name):
        error, word = await _access(ctx, bus, CONTROL_NODE, control_register(name).address,
                                    budget)
        if error:
            raise RuntimeError(f"the chain refused a {name} read")
        return int(word)

    async def start(ctx):
        # Refused while the chain cannot take it (busy, sequential policy): retried at once.
        while True:
            error, _ = await _access(ctx, bus, CONTROL_NODE, control, budget,
                                      write=CONTROL_START)
            if not error:
                return

    async def wait_done(ctx):
        while True:
            word = await read(ctx, "STATUS")
            if word & STATUS_DONE and not word & STATUS_BUSY:
                return

    async def testbench(ctx):
        await ctx.tick().repeat(2)
        await start(ctx)
        await wait_done(ctx)
        result["latency"] = await read(ctx, "LATENCY_CYCLES")
        for _ in range(updates - 1):
            await start(ctx)
        await wait_done(ctx)
        result["interval"] = await read(ctx, "INTERVAL_CYCLES")
        result["count"] = await read(ctx, "UPDATE_COUNT")

    simulator = Simulator(chain)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()
    return {"update_latency_cycles": result["latency"],
            "update_interval_cycles": result["interval"],
            "update_count": result["count"]}


def schedule_update_cycles(nodes, fmt=None):
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
