"""Drive a :class:`~linkdyn.gateware.chain.LinkDynChain` through its register bus in the Amaranth
simulator, as the host link does.

Used by the chain's unit tests and by :mod:`linkdyn.bench.chain`. :class:`BusHost`
runs register-bus transactions (one at a time, ``valid`` held until ``ready``, as
:class:`~linkdyn.gateware.protocol.ProtocolEngine`) and counts the cycles; :func:`run_updates`
loads a robot and runs joint states, one update at a time or as a pipelined stream, and returns
every update's words and cycle figures, with the cycle each node wrote its ``tau`` (seen on the
node's ``result`` port).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amaranth.sim import Simulator

from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.microprogram import microprogram
from linkdyn.model.protocol import (
    CONTROL_CLEAR, CONTROL_NODE, CONTROL_START, RESULT_SELECT, STATUS_BUSY, STATUS_DONE,
    control_register,
)


__all__ = ["BusHost", "UpdateRecord", "run_updates", "simulate"]

_REGISTERS = microprogram().registers



class BusHost:
    """Register-bus initiator for Amaranth testbenches; ``cycle`` counts the clock edges it
    waited for."""

    def __init__(self, chain):
        self.chain = chain
        self.bus = chain.bus
        self.cycle = 0

    async def tick(self, ctx, count=1):
        """Wait ``count`` cycles."""
        for _ in range(count):
            await ctx.tick()
            self.cycle += 1

    async def access(self, ctx, node, addr, write=None, *, limit=100_000):
        """One transaction; return ``(error, word)`` (word unsigned).

        Raises
        ------
        TimeoutError
            If the target does not answer within ``limit`` cycles.
        """
        bus = self.bus
        ctx.set(bus.valid, 1)
        ctx.set(bus.node, node)
        ctx.set(bus.addr, addr)
        ctx.set(bus.we, write is not None)
        ctx.set(bus.wdata, (write or 0) & 0xFFFFFFFF)
        for _ in range(limit):
            _, _, ready, error, rdata = await ctx.tick().sample(bus.ready, bus.error, bus.rdata)
            self.cycle += 1
            if ready:
                ctx.set(bus.valid, 0)
                return bool(error), int(rdata)
        raise TimeoutError(f"no answer to node {node:#x} address {addr:#x} within {limit} "
                           f"cycles")

    async def read(self, ctx, node, addr):
        """Read a word (signed); raise ``AssertionError`` if refused."""
        error, word = await self.access(ctx, node, addr)
        assert not error, f"read of node {node:#x} address {addr:#x} refused"
        return signed_word(word)

    async def control(self, ctx, name):
        """Read a control register (unsigned)."""
        error, word = await self.access(ctx, CONTROL_NODE, control_register(name).address)
        assert not error, f"read of {name} refused"
        return word

    async def write(self, ctx, node, addr, word):
        """Write a word; return whether it was taken."""
        error, _ = await self.access(ctx, node, addr, word)
        return not error

    async def start(self, ctx):
        """Write CONTROL.start; return whether it was taken."""
        return await self.write(ctx, CONTROL_NODE, control_register("CONTROL").address,
                                CONTROL_START)

    async def clear(self, ctx):
        """Write CONTROL.clear."""
        assert await self.write(ctx, CONTROL_NODE, control_register("CONTROL").address,
                                CONTROL_CLEAR)


@dataclass
class UpdateRecord:
    """One update run by :func:`run_updates`.

    Attributes
    ----------
    tau : list of int
        The ``tau`` word of every node (signed).
    overflow : int
        OVERFLOW (bit per node).
    start_cycle : int
        Cycle the CONTROL.start write completed (the update's first cycle follows it).
    tau_cycles : list of int
        Per node, the cycle its ``tau`` result was written (register-file write edge).
    latency : int or None
        LATENCY_CYCLES after the update (None if a later update had finished when it was read).
    interval : int or None
        INTERVAL_CYCLES after the update (likewise).
    """

    tau: list
    overflow: int
    start_cycle: int
    tau_cycles: list = field(default_factory=list)
    latency: int | None = 0
    interval: int | None = 0

    @property
    def last_tau_latency(self):
        """int: cycles from the start to the last node's ``tau`` write, inclusive of the write
        cycle."""
        return max(self.tau_cycles) - self.start_cycle


async def _load(ctx, host, constants, base_motion):
    for i, words in enumerate(constants):
        for name, word in words.items():
            assert await host.write(ctx, i, _REGISTERS[name].address, word)
    for name, word in base_motion.items():
        assert await host.write(ctx, 0, _REGISTERS[name].address, word)


async def run_updates(ctx, host, constants, base_motion, states, *, pipelined=False,
                      window=3, records=None, taus=None):
    """Testbench body: load a robot, run ``states`` and append an :class:`UpdateRecord` per
    update to ``records``.

    Parameters
    ----------
    states : list of list of dict
        Per state and node, ``{input register: word}`` (only words that differ from the bank's
        previous ones are written).
    pipelined : bool
        Stream: write the next state's inputs and start it as soon as the chain accepts (up to
        ``window`` updates in flight); else one update at a time, the next started once STATUS
        reads done.
    taus : list
        Filled by :func:`simulate`'s result monitor: ``(cycle, node)`` of every ``tau`` write.
    """
    n = len(constants)
    banks = host.chain.banks
    await _load(ctx, host, constants, base_motion)
    await host.clear(ctx)
    held = [[{} for _ in range(n)] for _ in range(banks)]
    started = []
    collected = 0

    async def collect():
        # Every update finished since the last call, each selected with RESULT_SELECT (the
        # pipelined chain keeps the results of its last updates; updates may finish close
        # together).
        nonlocal collected
        count = await host.control(ctx, "UPDATE_COUNT")
        if count == collected:
            return False
        while collected < count:
            number = collected + 1
            if pipelined:
                assert await host.write(ctx, CONTROL_NODE, RESULT_SELECT, number), number
            else:
                assert count == number, "an update finished unseen"
            tau = [await host.read(ctx, i, _REGISTERS["tau"].address) for i in range(n)]
            overflow = await host.control(ctx, "OVERFLOW")
            latency = interval = None
            if number == count:
                latency = await host.control(ctx, "LATENCY_CYCLES")
                interval = await host.control(ctx, "INTERVAL_CYCLES")
                if await host.control(ctx, "UPDATE_COUNT") != count:
                    latency = interval = None
            records.append(UpdateRecord(tau, overflow, started[collected], latency=latency,
                                        interval=interval))
            collected += 1
        return True

    for index, inputs in enumerate(states):
        bank = index % banks
        while pipelined and len(started) - collected >= window:
            await collect()
        first = True
        for i, words in enumerate(inputs):
            for name, word in words.items():
                if held[bank][i].get(name) == word:
                    continue
                while not await host.write(ctx, i, _REGISTERS[name].address, word):
                    assert first, "an input write was refused after the first"
                    await collect()
                first = False
                held[bank][i][name] = word
        while not await host.start(ctx):
            await collect()
        started.append(host.cycle)
        if not pipelined:
            while True:
                status = await host.control(ctx, "STATUS")
                if status & STATUS_DONE and not status & STATUS_BUSY:
                    break
            await collect()
    while collected < len(states):
        await collect()
    if taus is not None:
        for record in records[-len(states):]:
            record.tau_cycles = [None] * n
        # Attribute the tau writes to updates in order, per node.
        per_node = [[cycle for cycle, node in taus if node == i] for i in range(n)]
        for i in range(n):
            for record, cycle in zip(records[-len(states):], per_node[i][-len(states):]):
                record.tau_cycles[i] = cycle


def simulate(chain, constants, base_motion, states, *, pipelined=False, window=3,
             vcd_file=None):
    """Run :func:`run_updates` in the Amaranth simulator; return the list of
    :class:`UpdateRecord`."""
    host = BusHost(chain)
    records = []
    taus = []
    tau_address = _REGISTERS["tau"].address

    async def bench(ctx):
        await run_updates(ctx, host, constants, base_motion, states, pipelined=pipelined,
                          window=window, records=records, taus=taus)

    async def monitor(ctx):
        signals = [(node.result.valid, node.result.addr) for node in chain.nodes]
        flat = [s for pair in signals for s in pair]
        edge = 0
        # Counts the same clock edges as `host.cycle` (the host waits on every one of them).
        async for _, _, *values in ctx.tick().sample(*flat):
            edge += 1
            for i in range(len(chain.nodes)):
                if values[2 * i] and values[2 * i + 1] == tau_address:
                    taus.append((edge, i))

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(monitor, background=True)
    if vcd_file is None:
        sim.run()
    else:
        with sim.write_vcd(vcd_file):
            sim.run()
    return records
