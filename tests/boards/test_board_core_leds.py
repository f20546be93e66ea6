"""The board core's heartbeat (linkdyn.boards.core.heartbeat): the beat toggles in the first
cycle and then every clock_hz // 2 cycles (about 1 Hz), checked cycle by cycle in the Amaranth
simulator against that definition."""

import warnings

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from linkdyn.boards.core import heartbeat


@pytest.mark.parametrize("clock_hz", [2, 14, 40])
def test_heartbeat_toggles_every_half_period(clock_hz):
    m = Module()
    beat = heartbeat(m, clock_hz)
    half = clock_hz // 2
    seen = []

    async def bench(ctx):
        for _ in range(5 * half + 3):
            await ctx.tick()
            seen.append(ctx.get(beat))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        sim.run()
    # The toggles of cycles 0, half, 2 half, ... are seen after the tick that ends them.
    expected = [((cycle // half) + 1) % 2 for cycle in range(len(seen))]
    assert seen == expected
