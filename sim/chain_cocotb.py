"""cocotb 2 testbench of the exported chain (:class:`linkdyn.gateware.chain.LinkDynChain`).

The simulator runs this module (``COCOTB_TEST_MODULES``) on the Verilog of
``python -m linkdyn.gateware.chain``; the pytest functions of ``tests/sim/test_chain_*.py`` build
and start it through :func:`linkdyn.sim.runner.run_cocotb` and pass the parameters in
environment variables:

``LINKDYN_CHAIN_CASES``
    JSON list of cases (:mod:`linkdyn.sim.chain_cases`), run one after the other on the same
    chain (the robot constants are reloaded over the bus for each).
``LINKDYN_CHAIN_POLICY``
    ``"sequential"`` or ``"pipelined"`` (what the Verilog was exported with).
``LINKDYN_CHAIN_BANKS``
    Register banks of the pipelined chain.
``LINKDYN_CHAIN_WINDOW``
    Pipelined policy: updates the driver keeps in flight (default 4).
``LINKDYN_CHAIN_SUMMARY``
    Path of a JSON summary the tests write (states checked, cycles, seconds).
``LINKDYN_CHAIN_RESULTS``
    Path of a JSON file that receives every update's ``tau`` words, per case.

The layers follow cocotb's examples: :class:`RegisterBus` drives the register bus (the
protocol engine's side of :class:`~linkdyn.gateware.bus.RegisterBusSignature`);
:class:`ChainDriver` loads a robot and feeds joint states as the host does, sequentially or as a
pipelined stream; :class:`ChainMonitor` collects every finished update (``tau`` of every node,
OVERFLOW, the base wrench, LATENCY_CYCLES, INTERVAL_CYCLES) through the bus; the golden model
(:func:`linkdyn.model.golden.rnea_fixed`, via :func:`linkdyn.sim.chain_cases.build_case`) is the
reference, and :class:`Scoreboard` checks the updates in order, word for word.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

import cocotb
from cocotb.clock import Clock
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, RisingEdge

from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.golden import microprogram
from linkdyn.model.protocol import (
    CONTROL_CLEAR, CONTROL_NODE, CONTROL_START, RESULT_SELECT, STATUS_BUSY, STATUS_DONE,
    STATUS_OVERFLOW, control_register,
)
from linkdyn.sim.chain_cases import build_case, decode_cases

__all__ = ["RegisterBus", "ChainDriver", "ChainMonitor", "Update", "Scoreboard", "BusError",
           "CLOCK_PERIOD_NS"]

#: Clock period of the testbench, ns.
CLOCK_PERIOD_NS = 10

_MASK = 0xFFFFFFFF
_REGISTERS = microprogram().registers
_ADDRESS = {name: control_register(name).address for name in (
    "CONTROL", "STATUS", "OVERFLOW", "OVERFLOW_STICKY", "LATENCY_CYCLES", "INTERVAL_CYCLES",
    "UPDATE_COUNT")}
_WRENCH = [f"{quantity}_out_{c}" for quantity in ("f", "mu") for c in "xyz"]



class BusError(AssertionError):
    """The chain refused a register access the test expected it to take."""


class RegisterBus:
    """Initiator of the register bus: one transaction at a time, as the protocol engine.

    Fields change on falling clock edges only, so that the chain samples stable values on the
    rising ones; ``ready`` is looked at on falling edges (the transaction completes at the next
    rising edge). After a transaction ``valid`` is dropped before the chain could take it again.
    """

    def __init__(self, dut):
        self.dut = dut
        self.falling = FallingEdge(dut.clk)
        self.transactions = 0
        self._holding = False

    async def access(self, node, addr, write=None):
        """Run one transaction; return ``(error, word)`` (word unsigned 32-bit)."""
        dut = self.dut
        await self.falling
        dut.bus__node.value = node
        dut.bus__addr.value = addr
        dut.bus__we.value = int(write is not None)
        dut.bus__wdata.value = (write or 0) & _MASK
        dut.bus__valid.value = 1
        while True:
            await self.falling
            if dut.bus__ready.value:
                error = bool(dut.bus__error.value)
                value = dut.bus__rdata.value
                if not value.is_resolvable:
                    raise AssertionError(f"bus read of node {node:#x} address {addr:#x} gave "
                                         f"{value} (undefined bits)")
                word = int(value)
                break
        self._holding = True
        self.transactions += 1
        return error, word

    async def release(self):
        """Drop ``valid`` after the last transaction (before waiting on anything else)."""
        if self._holding:
            await self.falling
            self.dut.bus__valid.value = 0
            self._holding = False

    async def read(self, node, addr):
        """Read a word (signed); raise :class:`BusError` if refused."""
        error, word = await self.access(node, addr)
        if error:
            raise BusError(f"read of node {node:#x} address {addr:#x} refused")
        return signed_word(word)

    async def write(self, node, addr, word):
        """Write a word; return whether the chain took it."""
        error, _ = await self.access(node, addr, word)
        return not error

    async def control(self, name):
        """Read a control-block register (unsigned)."""
        error, word = await self.access(CONTROL_NODE, _ADDRESS[name])
        if error:
            raise BusError(f"read of {name} refused")
        return word


@dataclass
class Update:
    """One finished update as the monitor saw it through the bus."""

    index: int
    tau: list
    overflow: int
    base_wrench: list | None
    latency: int | None
    interval: int | None


class ChainDriver:
    """Loads robots and feeds joint states through the register bus.

    Only the input words that differ from what the chain already holds in the bank a state
    will use are written (the pipelined chain has ``banks`` input banks, sample k in bank
    ``k mod banks``), as a host streaming states would.
    """

    def __init__(self, bus, n, banks):
        self.bus = bus
        self.n = n
        self.banks = banks
        self.held = None

    async def load_robot(self, case):
        """Write every node's constants and node 0's base motion (LOAD_ROBOT)."""
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                if not await self.bus.write(i, _REGISTERS[name].address, word):
                    raise BusError(f"constant {name} of node {i} refused")
        for name, word in case.base_motion.items():
            if not await self.bus.write(0, _REGISTERS[name].address, word):
                raise BusError(f"base motion {name} refused")
        self.held = [[{} for _ in range(self.n)] for _ in range(self.banks)]

    async def write_inputs(self, inputs, bank, between=None):
        """Write the changed input words of one state into ``bank``.

        Returns False if the chain refused the first word (the bank is still in use); any later
        refusal is an error. ``between`` is awaited after every node's words (the pipelined
        monitor polls there).
        """
        first = True
        for i, words in enumerate(inputs):
            held = self.held[bank][i]
            for name, word in words.items():
                if held.get(name) == word:
                    continue
                if not await self.bus.write(i, _REGISTERS[name].address, word):
                    if first:
                        return False
                    raise BusError(f"input {name} of node {i} refused after the first word")
                first = False
                held[name] = word
            if between is not None:
                await between()
        return True

    async def start(self):
        """Write CONTROL.start; return whether the chain took it."""
        return await self.bus.write(CONTROL_NODE, _ADDRESS["CONTROL"], CONTROL_START)


class ChainMonitor:
    """Collects finished updates through the bus: ``tau`` of every node, OVERFLOW, base wrench
    (every ``wrench_every``-th update), LATENCY_CYCLES and INTERVAL_CYCLES.

    With ``select`` (pipelined policy) every update is picked with the chain's RESULT_SELECT
    register, so that updates finishing close together are all seen; else the result registers
    show the last update, which must be the one expected.
    """

    def __init__(self, bus, n, wrench_every=10, select=False):
        self.bus = bus
        self.n = n
        self.wrench_every = wrench_every
        self.select = select
        self.collected = 0
        self.updates = []

    async def poll(self):
        """Collect every update finished since the last one collected; return how many."""
        bus = self.bus
        count = await bus.control("UPDATE_COUNT")
        new = count - self.collected
        while self.collected < count:
            number = self.collected + 1
            if self.select:
                error, _ = await bus.access(CONTROL_NODE, RESULT_SELECT, number)
                assert not error, f"RESULT_SELECT {number} refused"
            else:
                assert count == number, (f"UPDATE_COUNT {count}: an update finished unseen "
                                         f"(collected {self.collected})")
            tau = [await bus.read(i, _REGISTERS["tau"].address) for i in range(self.n)]
            overflow = await bus.control("OVERFLOW")
            wrench = None
            if self.collected % self.wrench_every == 0:
                wrench = [await bus.read(0, _REGISTERS[name].address) for name in _WRENCH]
            latency = interval = None
            if number == count:
                latency = await bus.control("LATENCY_CYCLES")
                interval = await bus.control("INTERVAL_CYCLES")
                if await bus.control("UPDATE_COUNT") != count:
                    latency = interval = None
            self.updates.append(Update(self.collected, tau, overflow, wrench, latency,
                                       interval))
            self.collected += 1
        return new

    async def collect(self):
        """Collect the one update that has just finished (sequential policy)."""
        assert await self.poll() == 1, "no update, or more than one, finished"


@dataclass
class Scoreboard:
    """Checks updates in order against the golden words of the cases run."""

    expected: list = field(default_factory=list)   # (case, state index)
    checked: int = 0
    saturated: int = 0
    wrenches: int = 0

    def expect(self, case, state):
        self.expected.append((case, state))

    def check(self, update):
        case, s = self.expected[update.index]
        name = case.spec["robot"]
        want = [int(w) for w in case.tau_words[s]]
        assert update.tau == want, (f"{name} state {s}: tau words {update.tau}, golden {want}")
        flags = sum(1 << i for i in range(case.n) if case.overflow[s, i])
        assert update.overflow == flags, (f"{name} state {s}: OVERFLOW {update.overflow:#x}, "
                                          f"golden {flags:#x}")
        if update.base_wrench is not None:
            want = [int(w) for w in case.base_wrench_words[s]]
            assert update.base_wrench == want, (f"{name} state {s}: base wrench "
                                                f"{update.base_wrench}, golden {want}")
            self.wrenches += 1
        self.saturated += bool(flags)
        self.checked += 1


async def _reset(dut):
    dut.bus__valid.value = 0
    dut.bus__node.value = 0
    dut.bus__addr.value = 0
    dut.bus__we.value = 0
    dut.bus__wdata.value = 0
    dut.rst.value = 1
    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


def _cycles():
    return int(get_sim_time(unit="ns")) // CLOCK_PERIOD_NS


def _parameters():
    cases = decode_cases(os.environ["LINKDYN_CHAIN_CASES"])
    policy = os.environ.get("LINKDYN_CHAIN_POLICY", "sequential")
    banks = int(os.environ.get("LINKDYN_CHAIN_BANKS", "1"))
    window = int(os.environ.get("LINKDYN_CHAIN_WINDOW", "4"))
    return cases, policy, banks, window


async def _run_sequential(dut, bus, driver, monitor, scoreboard, case):
    for s in range(case.count):
        assert await driver.write_inputs(case.inputs[s], 0), "inputs refused while idle"
        assert await driver.start(), "CONTROL.start refused while idle"
        scoreboard.expect(case, s)
        await bus.release()
        if dut.busy.value:
            await FallingEdge(dut.busy)
        status = await bus.control("STATUS")
        assert status & (STATUS_BUSY | STATUS_DONE) == STATUS_DONE, f"STATUS {status:#x}"
        await monitor.collect()
        scoreboard.check(monitor.updates[-1])


async def _run_pipelined(dut, bus, driver, monitor, scoreboard, case, window, banks):
    started = 0
    checked = len(monitor.updates)
    total = len(scoreboard.expected) + case.count

    async def poll():
        nonlocal checked
        await monitor.poll()
        while checked < len(monitor.updates):
            scoreboard.check(monitor.updates[checked])
            checked += 1

    while monitor.collected < total:
        in_flight = len(scoreboard.expected) - monitor.collected
        if started < case.count and in_flight < window:
            bank = (len(scoreboard.expected)) % banks
            if not await driver.write_inputs(case.inputs[started], bank, between=poll):
                await poll()
                continue
            while not await driver.start():
                await poll()
            scoreboard.expect(case, started)
            started += 1
        await poll()
    await bus.release()


@cocotb.test()
async def chain_matches_golden_model(dut):
    """Every update of every case: tau words, overflow flags and base wrench equal the golden
    model's; OVERFLOW_STICKY is their union and CONTROL.clear clears it."""
    cases, policy, banks, window = _parameters()
    await _reset(dut)
    bus = RegisterBus(dut)
    summary = {"policy": policy, "cases": []}
    scoreboard = Scoreboard()
    monitor = None
    results = []
    for spec in cases:
        wall = time.monotonic()
        case = build_case(spec)
        n = case.n
        assert len(dut.overflow_sticky) == n, "the Verilog has another node count than the case"
        driver = ChainDriver(bus, n, banks if policy == "pipelined" else 1)
        if monitor is None:
            monitor = ChainMonitor(bus, n, select=policy == "pipelined")
        assert monitor.n == n, "all cases of one run must have the same node count"
        await driver.load_robot(case)
        assert await bus.write(CONTROL_NODE, _ADDRESS["CONTROL"], CONTROL_CLEAR)
        start_cycle = _cycles()
        before = scoreboard.checked
        saturated_before = scoreboard.saturated
        if policy == "pipelined":
            await _run_pipelined(dut, bus, driver, monitor, scoreboard, case, window,
                                 driver.banks)
        else:
            await _run_sequential(dut, bus, driver, monitor, scoreboard, case)
        updates = monitor.updates[before:]
        assert len(updates) == case.count
        sticky = await bus.control("OVERFLOW_STICKY")
        flags = 0
        for s in range(case.count):
            flags |= sum(1 << i for i in range(n) if case.overflow[s, i])
        assert sticky == flags, f"OVERFLOW_STICKY {sticky:#x}, golden union {flags:#x}"
        status = await bus.control("STATUS")
        assert bool(status & STATUS_OVERFLOW) == bool(flags)
        assert await bus.write(CONTROL_NODE, _ADDRESS["CONTROL"], CONTROL_CLEAR)
        assert await bus.control("OVERFLOW_STICKY") == 0
        cycles = _cycles() - start_cycle
        latencies = [u.latency for u in updates if u.latency is not None]
        intervals = [u.interval for u in updates[1:] if u.interval is not None]
        summary["cases"].append({
            "robot": spec["robot"], "n": n, "states": case.count,
            "checked": scoreboard.checked - before,
            "saturating_states": scoreboard.saturated - saturated_before,
            "cycles": cycles, "cycles_per_state": cycles / max(1, case.count),
            "latency_min": min(latencies), "latency_max": max(latencies),
            "interval_min": min(intervals, default=0),
            "interval_median": sorted(intervals)[len(intervals) // 2] if intervals else 0,
            "seconds": time.monotonic() - wall,
        })
        dut._log.info("%s: %d states checked, %d cycles, %.1f s", spec["robot"],
                      scoreboard.checked - before, cycles, time.monotonic() - wall)
        results.append({"robot": spec["robot"], "tau": [u.tau for u in updates],
                        "overflow": [u.overflow for u in updates]})
    summary["checked"] = scoreboard.checked
    summary["base_wrenches_checked"] = scoreboard.wrenches
    summary["transactions"] = bus.transactions
    for variable, content in (("LINKDYN_CHAIN_SUMMARY", summary),
                              ("LINKDYN_CHAIN_RESULTS", {"cases": results})):
        path = os.environ.get(variable)
        if path:
            with open(path, "w") as file:
                json.dump(content, file, indent=1)
