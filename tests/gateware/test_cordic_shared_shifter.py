"""The two-cycle CORDIC steps on one shared barrel shifter: other definitions than the default
equal :meth:`linkdyn.model.tables.Cordic.atan` bit for bit, and a definition whose iterations
cannot run in pairs is refused."""

import gc
import random
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.cordic import CordicArctangent
from linkdyn.model.tables import Cordic

WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1


def atan_words(cordic, inputs):
    """Return the two-cycle unit's results, each read when ``done`` pulses."""
    dut = CordicArctangent(cordic, step_cycles=2)
    results = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(dut.x, x)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for _ in range(dut.latency - 1):
                assert not ctx.get(dut.done)
                await ctx.tick()
            assert ctx.get(dut.done)
            results.append(ctx.get(dut.result))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return results


@pytest.mark.parametrize("iterations", [8, 16, 30])
def test_shared_shifter_cordic_matches_model_for_other_iteration_counts(iterations):
    cordic = Cordic(iterations=iterations)
    rng = random.Random(iterations)
    inputs = [0, 1, -1, WORD_MIN, WORD_MAX, 1 << 16, -(3 << 15)]
    inputs += [rng.randint(WORD_MIN, WORD_MAX) for _ in range(40)]
    assert CordicArctangent.latency_of(cordic, 2) == 2 * iterations + 1
    assert atan_words(cordic, inputs) == [int(v) for v in cordic.atan(np.array(inputs))]


def test_shared_shifter_cordic_refuses_an_odd_iteration_count():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="iterations must be even, not 23"):
            CordicArctangent(Cordic(iterations=23), step_cycles=2)
        CordicArctangent(Cordic(iterations=23), step_cycles=1)    # one-cycle steps: any count
        gc.collect()
