"""LATENCY_CYCLES and INTERVAL_CYCLES of the sequential chain, cycle for cycle (docs/chain.md):
LATENCY_CYCLES is the cycles from the cycle CONTROL.start is taken to the cycle the update
finishes, INTERVAL_CYCLES the cycles between the last two starts (the first: since reset).

Amaranth simulator; the reference is the chain's ``busy`` output watched every cycle (it rises
the cycle after a start is taken and falls the cycle after the update finishes), with idle
gaps of random length (fixed seed) between the updates.
"""

import random

import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain
from linkdyn.model.golden import microprogram
from linkdyn.sim.chain_cases import build_case
from linkdyn.sim.chain_testbench import BusHost

REGISTERS = microprogram().registers


@pytest.mark.parametrize("n", [1, 2])
def test_latency_and_interval_equal_the_cycles_busy_shows(n):
    case = build_case({"robot": f"random:{n}:5", "states": 4, "seed": 5})
    chain = LinkDynChain(n, policy="sequential")
    host = BusHost(chain)
    rng = random.Random(n)
    edges = {"rise": [], "fall": []}
    words = []

    async def watch(ctx):
        cycle, before = 0, 0
        async for _, _, busy in ctx.tick().sample(chain.busy):
            cycle += 1
            if busy and not before:
                edges["rise"].append(cycle)
            if before and not busy:
                edges["fall"].append(cycle)
            before = busy

    async def bench(ctx):
        for i, constants in enumerate(case.constants):
            for name, word in constants.items():
                assert await host.write(ctx, i, REGISTERS[name].address, word)
        for name, word in case.base_motion.items():
            assert await host.write(ctx, 0, REGISTERS[name].address, word)
        for state in range(case.count):
            for i, inputs in enumerate(case.inputs[state]):
                for name, word in inputs.items():
                    assert await host.write(ctx, i, REGISTERS[name].address, word)
            await host.tick(ctx, rng.randrange(0, 40))
            assert await host.start(ctx)
            while await host.control(ctx, "STATUS") & 1:
                pass
            words.append((await host.control(ctx, "LATENCY_CYCLES"),
                          await host.control(ctx, "INTERVAL_CYCLES")))

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_process(watch)
    sim.run()
    rise, fall = edges["rise"], edges["fall"]
    assert len(rise) == len(fall) == case.count
    # busy is high from the cycle after the start to the cycle after the finish. The edges are
    # counted from 1 and `sample` gives the values just before each edge, so a start taken in
    # cycle s (cycles counted from 0 at reset) shows as a rise at edge s + 2.
    want = [(f - r, r - (rise[k - 1] if k else 2)) for k, (r, f) in enumerate(zip(rise, fall))]
    assert words == want
    assert all(150 < latency < 400 for latency, _ in words)
