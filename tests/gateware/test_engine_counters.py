"""The protocol engine's counters (:class:`linkdyn.gateware.protocol.EngineRegisters`) against
their definition (docs/protocol.md, the control block): FRAME_COUNT counts OK replies and
wraps at 32 bits; every error and UART counter counts its events and saturates at
``2**counter_width - 1``; ``clear`` zeroes every counter but FRAME_COUNT (an event in the
cycle of the clear is not counted); the build-information words are the spec's.

Amaranth simulator, random events (fixed seed) with a narrow counter width so that saturation
is reached; every word is read after each burst of events and compared with a Python count.
Replies (``count``) come at least 3 cycles apart, and so do the pulses of each UART error, as
in the engine (one reply per frame, at most one UART error of each kind per received byte).
"""

import random

from amaranth.sim import Simulator

from linkdyn.gateware.protocol import EngineRegisters
from linkdyn.model.protocol import CONTROL_REGISTERS, INFO_FIRST, ErrorCode, ProtocolSpec

WIDTH = 3
ENGINE_WORDS = [reg for reg in CONTROL_REGISTERS if reg.owner == "engine"]
COUNTERS = [reg.name for reg in ENGINE_WORDS if reg.address < INFO_FIRST]


def _counter_of(event):
    kind, value = event
    if kind == "uart":
        return value
    return "FRAME_COUNT" if value is ErrorCode.OK else f"ERRORS_{value.name}"


def _source_of(event):
    """The input an event comes on (``count``, or a UART error pulse)."""
    kind, value = event
    return "count" if kind == "reply" else value


def test_engine_counters_count_saturate_and_clear_as_defined():
    spec = ProtocolSpec(1, controllers=True)
    dut = EngineRegisters(spec, counter_width=WIDTH)
    info = spec.engine_words()
    rng = random.Random(14)
    reference = dict.fromkeys(COUNTERS, 0)
    checked = {"reads": 0, "saturated": set()}

    async def read_all(ctx):
        for reg in ENGINE_WORDS:
            ctx.set(dut.addr, reg.address)
            got = ctx.get(dut.rdata)
            want = reference[reg.name] if reg.name in reference else info[reg.name]
            assert got == want, (reg.name, got, want)
            checked["reads"] += 1
        for name, value in reference.items():
            if name != "FRAME_COUNT" and value == (1 << WIDTH) - 1:
                checked["saturated"].add(name)

    async def bench(ctx):
        await read_all(ctx)
        last = {}
        cycle = 0
        for burst in range(150):
            for _ in range(rng.randrange(1, 12)):
                # This cycle's events: at most one reply and one pulse of each UART error.
                events = []
                if rng.random() < 0.5:
                    events.append(("reply", rng.choice(list(ErrorCode))))
                for name in ("UART_FRAME_ERRORS", "UART_OVERFLOWS"):
                    if rng.random() < 0.3:
                        events.append(("uart", name))
                events = [e for e in events if cycle - last.get(_source_of(e), -9) >= 3]
                clear = rng.random() < 0.004
                ctx.set(dut.count, 0)
                ctx.set(dut.uart_errors.frame, 0)
                ctx.set(dut.uart_errors.overflow, 0)
                for event in events:
                    kind, value = event
                    last[_source_of(event)] = cycle
                    if kind == "reply":
                        ctx.set(dut.count, 1)
                        ctx.set(dut.status, value.value)
                    else:
                        ctx.set(dut.uart_errors.frame if value == "UART_FRAME_ERRORS"
                                else dut.uart_errors.overflow, 1)
                ctx.set(dut.clear, clear)
                for event in events:
                    name = _counter_of(event)
                    if name == "FRAME_COUNT":
                        reference[name] = (reference[name] + 1) & 0xFFFFFFFF
                    elif not clear:
                        reference[name] = min(reference[name] + 1, (1 << WIDTH) - 1)
                if clear:
                    for name in reference:
                        if name != "FRAME_COUNT":
                            reference[name] = 0
                await ctx.tick()
                cycle += 1
            ctx.set(dut.count, 0)
            ctx.set(dut.clear, 0)
            ctx.set(dut.uart_errors.frame, 0)
            ctx.set(dut.uart_errors.overflow, 0)
            await ctx.tick().repeat(4)       # the counts still pending are written
            cycle += 4
            await read_all(ctx)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert checked["reads"] > 1000
    assert len(checked["saturated"]) >= 6, checked["saturated"]
